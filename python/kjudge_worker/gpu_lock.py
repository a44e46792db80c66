"""The node's per-GPU lock (the flock file kjudged's native jobs take). Timed loops (the
reference's baseline, a candidate's loop) hold it exclusively; the worker's own GPU work (making
sets, copying them out, comparing) holds it shared, so that work overlaps with itself but never
with a timed loop. A turnstile file in front keeps a waiting timed loop from being starved by a
stream of shared holders.

The worker's locks are taken in one order, never against it: the prepare budget
(prepare_budget.py), the heavy-set lock (job.Heavy), the device peaks' lock (roofline.py), this
lock (turnstile, then the file), a problem's lock (problems.py), then the leaves (the draws'
generators, the cache, the comparator's self-check). A thread that waits here holding a lock
that comes after it can deadlock the worker: a timed loop waiting in the turnstile blocks every
later shared holder, including the one that would release it (tests/python/test_worker_lock_order.py)."""
import fcntl
import os
import time

from .waits import waiting


class GpuLock:
    def __init__(self, path, shared=False):
        self.path, self.shared = path, shared
        self.fd = None

    def acquire(self):
        """Seconds waited. Without a lock file (CPU jobs) a no-op."""
        if not self.path or self.fd is not None:
            return 0.0
        t0 = time.monotonic()
        gate = os.open(self.path + ".turnstile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            with waiting():  # other jobs' loops and GPU work: the reference's budget gives it back
                fcntl.flock(gate, fcntl.LOCK_EX)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                fcntl.flock(fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        finally:
            os.close(gate)  # through the turnstile: the next in line may go
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
