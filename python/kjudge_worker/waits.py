"""Seconds a job's prepare spends waiting for other jobs: for the prepare budget, the heavy-set
lock, the GPU lock (other jobs' timed loops), a problem's lock. kjudged asks at the reference's
deadline (`prepare_waited`) and gives them back, as it gives a candidate its waits for the judge:
the reference's budget is its own time. Before, a worker stalled by other jobs' work had a healthy
reference run out of its budget, and the job was called INVALID_JOB (one H200, 2026-11-28).

A thread's prepare sets its clock (`counting`); the locks report their waits to the thread's
clock (`waiting`), an unfinished wait included when asked."""
import contextlib
import threading
import time

from . import lock_order

_thread = threading.local()


class WaitClock:
    def __init__(self):
        self._lock = threading.Lock()
        self._total = 0.0
        self._since = None

    def seconds_now(self):
        """Seconds waited so far, the wait in progress included."""
        with self._lock:
            running = time.monotonic() - self._since if self._since is not None else 0.0
            return self._total + running

    def begin(self):
        with self._lock:
            self._since = time.monotonic()

    def end(self):
        """Ends the wait in progress; returns its seconds."""
        with self._lock:
            spent = time.monotonic() - self._since
            self._total += spent
            self._since = None
            return spent


@contextlib.contextmanager
def counting(clock):
    """The current thread's waits go to `clock` until the block ends."""
    before = getattr(_thread, "clock", None)
    _thread.clock = clock
    try:
        yield clock
    finally:
        _thread.clock = before


@contextlib.contextmanager
def waiting():
    """A wait for other jobs' work: counted on the current thread's clock, if it has one."""
    clock = getattr(_thread, "clock", None)
    if clock is None:
        yield
        return
    clock.begin()
    try:
        yield
    finally:
        clock.end()


class CountedLock(lock_order.OrderedLock):
    """A threading lock whose blocked acquisitions are waits (`waiting`), taken in the worker's
    lock order as `name` (lock_order.py)."""

    def __init__(self, name, lock=None):
        self.name = name
        self._lock = lock if lock is not None else threading.Lock()

    def acquire(self, blocking=True, timeout=-1):
        lock_order.check(self.name, self)
        got = self._lock.acquire(blocking=False)
        if not got and blocking:
            with waiting():
                got = self._lock.acquire(timeout=timeout)
        if got:
            lock_order.taken(self.name, self)
        return got

    def release(self):
        self._lock.release()
        lock_order.released(self)
