"""The preparations' part of the device lent to kjudged's candidates while no preparation needs it
(kernelbench.candidate_borrow_share; src/pipeline/worker/device_budget.h). In an RL step's steady
state the problems are prepared and that part sits idle, while the candidates of the problems with
GiB-sized sets wait for device memory: on one H100 (bench/results/rlstep-20261208-h100-steady)
they waited a median 29-32 s in the next step's phase and were its whole tail, the device at most
72 of its 80 GB.

A loan is granted as a second heavy section's bytes are (PrepareBudget.lend): only while no
preparation waits and the budget has them. A preparation that arrives waits until enough is
repaid (the borrowing candidate's end), and no loan is granted while it waits. What torch may
keep cached for the worker shrinks by what is lent, and its cached blocks beyond that go back
before the loan is granted, so the bytes lent are free on the device. A loan's id is the
worker's own: a repayment this worker never lent (one to the worker it replaced) changes nothing."""
import itertools
import threading


class CandidateLoans:
    def __init__(self, budget, kept_bytes, release_beyond):
        """budget: the PrepareBudget lent from; kept_bytes: what torch may keep cached for the
        worker with nothing lent; release_beyond(n): torch's cached blocks back to the device
        while it holds more than n bytes."""
        self.budget, self.base_kept, self.release_beyond = budget, kept_bytes, release_beyond
        self.lock = threading.Lock()
        self.loans = {}  # id -> bytes
        self.ids = itertools.count(1)

    def lend(self, nbytes):
        """A loan's id for `nbytes`, or None (a preparation waits, or the budget lacks them)."""
        if nbytes <= 0 or not self.budget.lend(nbytes):
            return None
        with self.lock:
            loan = next(self.ids)
            self.loans[loan] = nbytes
        self.release_beyond(self.kept_bytes())
        return loan

    def repay(self, loan):
        """Bytes given back to the budget (0: not a loan of this worker's, or repaid before)."""
        with self.lock:
            nbytes = self.loans.pop(loan, 0)
        if nbytes:
            self.budget.repay(nbytes)
        return nbytes

    def lent(self):
        with self.lock:
            return sum(self.loans.values())

    def kept_bytes(self):
        """What torch may keep cached for the worker now: its part less what is lent."""
        return max(0, self.base_kept - self.lent())
