"""How many jobs the worker prepares at once (their sets made and run through the reference, the
meaning checks): as many as their transients fit in a share of the device, admitted in arrival
order. Before, one job prepared at a time (one lock around every prepare), so a job of 100 KB sets
waited behind every 6 GB job ahead of it: `oracle.sets` took a median 12.6 s per job on 4 H100s
(bench/results/rlstep-20261127-h100x4). A job's estimate comes from its inputs' declared size (a
draw on the meta device); a job whose size is unknown, or whose estimate is the whole budget,
prepares alone. Bytes no preparation uses are lent to a second large set in use
(heavy_sections.py) and to kjudged's candidates (candidate_loans.py), never ahead of a
preparation that waits."""
import contextlib
import threading

from . import lock_order
from .waits import waiting

PREPARE_SHARE = 0.2            # of the device's memory: the transients of jobs preparing at once
TRANSIENTS_PER_INPUT_BYTE = 4  # a set's inputs, its output, the reference's intermediates, a variant's copy
TRANSIENTS_FLOOR = 256 << 20   # the reference's own workspace (cuBLAS, cuDNN) on the smallest sets


def estimate(input_bytes, capacity):
    """The bytes a job's prepare is admitted with (the whole budget when its size is unknown)."""
    if input_bytes is None:
        return capacity
    return min(capacity, TRANSIENTS_PER_INPUT_BYTE * input_bytes + TRANSIENTS_FLOOR)


class PrepareBudget:
    def __init__(self, capacity):
        self.capacity = capacity
        self.used = 0
        self.arrived = self.admitted = 0  # tickets: first come, first admitted (a large job is not starved)
        self.cv = threading.Condition()

    @contextlib.contextmanager
    def hold(self, nbytes):
        """Waits until this job is the next to be admitted and `nbytes` fit beside the jobs
        preparing."""
        n = min(nbytes, self.capacity)
        lock_order.check("prepare_budget", self)
        with self.cv:
            ticket = self.arrived
            self.arrived += 1
            admitted = lambda: ticket == self.admitted and self.used + n <= self.capacity  # noqa: E731
            if not admitted():
                with waiting():
                    self.cv.wait_for(admitted)
            self.used += n
            self.admitted += 1
            self.cv.notify_all()
        lock_order.taken("prepare_budget", self)
        try:
            yield
        finally:
            lock_order.released(self)
            with self.cv:
                self.used -= n
                self.cv.notify_all()

    def lend(self, nbytes):
        """Takes `nbytes` for a use of a large set if they fit now and no preparation waits."""
        with self.cv:
            if self.arrived != self.admitted or self.used + nbytes > self.capacity:
                return False
            self.used += nbytes
            return True

    def repay(self, nbytes):
        with self.cv:
            self.used -= nbytes
            self.cv.notify_all()
