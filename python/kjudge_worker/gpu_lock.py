"""The node's per-GPU lock (the same flock file kjudged's native jobs take): held only around
timed loops, the reference's baseline and the candidate's, so everything else overlaps."""
import fcntl
import os
import time


class GpuLock:
    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self):
        """Seconds waited. Without a lock file (CPU jobs) a no-op."""
        if not self.path or self.fd is not None:
            return 0.0
        t0 = time.monotonic()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.fd = fd
        return time.monotonic() - t0

    def release(self):
        if self.fd is not None:
            os.close(self.fd)  # closing the last fd of the open file drops the flock
            self.fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
