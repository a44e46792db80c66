"""The preparations' part of the device lent to kjudged's candidates while no preparation needs it
(kernelbench.candidate_borrow_share; src/pipeline/worker/device_budget.h). In an RL step's steady
state the problems are prepared and that part sits idle, while the candidates of the problems with
GiB-sized sets wait for device memory: on one H100 (bench/results/rlstep-20261208-h100-steady)
they waited a median 29-32 s in the next step's phase and were its whole tail, the device at most
71.8 of its 79.6 GiB in use.

A loan is granted as a second heavy section's bytes are (PrepareBudget.lend): only while no
preparation waits and the budget has them. A preparation that arrives waits until enough is
repaid (the borrowing candidate's end), and no loan is granted while it waits. What torch may
keep cached for the worker shrinks by what is lent, and its cached blocks beyond that go back
before the loan is granted; a loan the device then has no room for is refused.

kjudged names each loan (unique in its process), so a loan whose answer it never got can still be
repaid: a repayment that comes before its loan (or for a loan refused) cancels it, and a
repayment of one this worker never lent changes nothing."""
import collections
import threading

CANCELLED_KEPT = 4096  # names repaid before their loan was granted: enough for any lend in flight


class CandidateLoans:
    def __init__(self, budget, kept_bytes, release_beyond, device_free):
        """budget: the PrepareBudget lent from; kept_bytes: what torch may keep cached for the
        worker with nothing lent; release_beyond(n): torch's cached blocks back to the device
        while it holds more than n bytes; device_free(): bytes free on the device now."""
        self.budget, self.base_kept = budget, kept_bytes
        self.release_beyond, self.device_free = release_beyond, device_free
        self.lock = threading.Lock()
        self.loans = {}  # name -> bytes
        self.cancelled = collections.OrderedDict()

    def lend(self, loan, nbytes):
        """Lends `nbytes` under kjudged's name `loan`: False when a preparation waits, the budget
        lacks them, the device has no room for them, or the name was repaid (cancelled) already."""
        with self.lock:
            if nbytes <= 0 or loan in self.loans or loan in self.cancelled or not self.budget.lend(nbytes):
                return False
            self.loans[loan] = nbytes
        self.release_beyond(self.kept_bytes())
        if self.device_free() < nbytes:
            self.repay(loan)
            return False
        return True

    def repay(self, loan):
        """Bytes given back to the budget (0: not lent, or repaid before; the name is cancelled)."""
        with self.lock:
            nbytes = self.loans.pop(loan, 0)
            if nbytes:
                self.budget.repay(nbytes)
            else:
                self.cancelled[loan] = True
                while len(self.cancelled) > CANCELLED_KEPT:
                    self.cancelled.popitem(last=False)
        return nbytes

    def lent(self):
        with self.lock:
            return sum(self.loans.values())

    def kept_bytes(self):
        """What torch may keep cached for the worker now: its part less what is lent."""
        return max(0, self.base_kept - self.lent())
