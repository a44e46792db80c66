"""How many jobs use a large set at once. One always may: the fixed reserve the candidates'
capacity leaves beside the worker (candidate_share.FIXED_RESERVE) holds one large set in use with
its transients. Further ones borrow their bytes from the preparations' part of the device
(prepare_budget.PrepareBudget) while no preparation waits for it and the device has room for them
beside every section in flight. Before, the worker used large sets one job at a time (a lock): on
one H200 each candidate of the largest problems waited a median 0.4-1.0 s for other jobs' large
sets, and 3.2-5.2 s where two such candidates ran at once (bench/results/rlstep-20261202-h200-torch-cache),
with the preparations' 28 GiB mostly idle.

A thread inside a section that asks again (a nested use) goes on under its first admission."""
import contextlib
import threading

from . import lock_order
from .waits import waiting

RECHECK_SECONDS = 0.05  # the device's free memory changes without a notification (candidates' own)


class HeavySections:
    def __init__(self, lender=None):
        """lender: the PrepareBudget further sections borrow from (None: one section at a time)."""
        self.lender = lender
        self.cv = lender.cv if lender is not None else threading.Condition()
        self.reserve_taken = False
        self.in_flight = 0  # bytes asked by the sections in flight
        self._thread = threading.local()

    @contextlib.contextmanager
    def section(self, need, room_for):
        """Admitted with `need` bytes; room_for(n): the device has n bytes free for the worker.
        Yields True for the section on the fixed reserve (which makes room for itself), False for
        one on borrowed bytes (admitted only where the room was there) or a nested use."""
        if getattr(self._thread, "depth", 0):
            self._thread.depth += 1
            try:
                yield False
            finally:
                self._thread.depth -= 1
            return
        lock_order.check("heavy_set", self)
        with self.cv:
            kind = self.admit(need, room_for)
            if kind is None:
                with waiting():
                    while kind is None:
                        self.cv.wait(RECHECK_SECONDS)
                        kind = self.admit(need, room_for)
        lock_order.taken("heavy_set", self)
        self._thread.depth = 1
        try:
            yield kind == "reserve"
        finally:
            self._thread.depth = 0
            lock_order.released(self)
            self.leave(kind, need)

    def admit(self, need, room_for):
        """Under self.cv: "reserve", "borrowed" or None (not now)."""
        if not self.reserve_taken:
            self.reserve_taken = True
            kind = "reserve"
        elif self.lender is not None and room_for(self.in_flight + need) and self.lender.lend(need):
            kind = "borrowed"
        else:
            return None
        self.in_flight += need
        return kind

    def others_in_flight(self, need):
        """Bytes the sections in flight beside one of `need` bytes asked for."""
        with self.cv:
            return self.in_flight - need

    def leave(self, kind, need):
        with self.cv:
            self.in_flight -= need
            if kind == "reserve":
                self.reserve_taken = False
            else:
                self.lender.repay(need)
            self.cv.notify_all()

