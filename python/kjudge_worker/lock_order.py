"""The worker's lock order, checked as each lock is taken. The worker serves every job of its
tenant in threads, and its locks are taken in one order (gpu_lock.py says why): a thread that
takes a lock ranked at or before one it already holds raises LockOrderError before it waits,
so a path against the order fails at once as the worker's fault (the request's job is retried)
instead of deadlocking the worker when the timing is unlucky (one H200, 2026-11-28: 5 minutes
without GPU work, a healthy reference called INVALID_JOB). Every test that runs the worker checks
the order on the paths it takes. Re-entering a reentrant lock the thread holds is allowed."""
import threading

RANK = {"prepare_budget": 1, "heavy_set": 2, "device_peaks": 3, "gpu": 4, "problem": 5}

_thread = threading.local()


class OrderedLock:
    """The worker's locks (GpuLock, waits.CountedLock): `with` takes one and gives it back."""

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


class LockOrderError(RuntimeError):
    """A lock taken against the worker's order: a deadlock waiting for its timing."""


def _held():
    held = getattr(_thread, "held", None)
    if held is None:
        held = _thread.held = []
    return held


def check(name, owner):
    """Before waiting for lock `name` (the object `owner`): raises if this thread holds a lock
    of the same or a later rank (other than `owner` itself)."""
    held = _held()
    if any(o is owner for _, o in held):
        return
    late = [n for n, _ in held if RANK[n] >= RANK[name]]
    if late:
        raise LockOrderError(f"the worker took its {name} lock while holding its {', '.join(late)} lock "
                             f"(order: {', '.join(RANK)})")


def holds(name):
    """This thread holds a lock named `name`."""
    return any(n == name for n, _ in _held())


def taken(name, owner):
    _held().append((name, owner))


def released(owner):
    held = _held()
    for i in range(len(held) - 1, -1, -1):
        if held[i][1] is owner:
            del held[i]
            return
