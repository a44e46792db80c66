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
later shared holder, including the one that would release it (tests/python/worker/test_worker_lock_order.py).
The order is checked as each lock is taken (lock_order.py)."""
import fcntl
import os
import time

from . import lock_order
from .waits import waiting


class GpuLock(lock_order.OrderedLock):
    def __init__(self, path, shared=False):
        self.path, self.shared = path, shared
        self.fd = None
        self.held = False

    def acquire(self):
        """Seconds waited. Without a lock file (CPU jobs) nothing to wait for, the order still checked."""
        if self.held:
            return 0.0
        lock_order.check("gpu", self)
        t0 = time.monotonic()
        if self.path:
            self.fd = self._flock()
        self.held = True
        lock_order.taken("gpu", self)
        return time.monotonic() - t0

    def _flock(self):
        gate = os.open(self.path + ".turnstile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            with waiting():  # other jobs' loops and GPU work: the reference's budget gives it back
                fcntl.flock(gate, fcntl.LOCK_EX)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                fcntl.flock(fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        finally:
            os.close(gate)  # through the turnstile: the next in line may go
        return fd

    def release(self):
        if not self.held:
            return
        if self.fd is not None:
            os.close(self.fd)  # closing the last fd of the open file drops the flock
            self.fd = None
        self.held = False
        lock_order.released(self)
