"""The preparations' idle part of the device lent to kjudged's candidates
(python/kjudge_worker/candidate_loans.py): never ahead of a preparation, repaid once, and what
torch keeps cached for the worker shrinks by it."""
import threading
import time

from kjudge_worker.candidate_loans import CandidateLoans
from kjudge_worker.prepare_budget import PrepareBudget

GB = 1 << 30


def loans_of(capacity=16 * GB, kept=32 * GB):
    released = []  # the keep each release was asked for
    return CandidateLoans(PrepareBudget(capacity), kept, released.append), released


def test_an_idle_budget_lends_and_the_worker_keeps_less_cached_until_repaid():
    loans, released = loans_of()
    loan = loans.lend(10 * GB)
    assert loan is not None and loans.lent() == 10 * GB
    assert loans.kept_bytes() == 22 * GB
    assert released == [22 * GB]  # torch's blocks beyond the smaller keep go back before the loan is granted
    assert loans.lend(7 * GB) is None  # 10 + 7 > 16
    assert loans.repay(loan) == 10 * GB
    assert loans.kept_bytes() == 32 * GB and loans.budget.used == 0


def test_a_repayment_counts_once_and_one_this_worker_never_lent_changes_nothing():
    loans, _ = loans_of()
    loan = loans.lend(4 * GB)
    assert loans.repay(loan + 1000) == 0  # e.g. a loan of the worker this one replaced
    assert loans.repay(None) == 0
    assert loans.budget.used == 4 * GB
    assert loans.repay(loan) == 4 * GB
    assert loans.repay(loan) == 0
    assert loans.budget.used == 0


def test_nothing_is_lent_while_a_preparation_waits_and_it_goes_in_once_repaid():
    loans, _ = loans_of()
    loan = loans.lend(12 * GB)
    admitted = threading.Event()

    def prepare():  # needs 8 of the 16: waits for the loan
        with loans.budget.hold(8 * GB):
            admitted.set()

    t = threading.Thread(target=prepare)
    t.start()
    deadline = time.monotonic() + 5
    while loans.budget.arrived == loans.budget.admitted and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not admitted.is_set()
    assert loans.lend(1 * GB) is None  # 13 of 16 would fit, but the preparation waits
    loans.repay(loan)
    t.join(5)
    assert admitted.is_set()
    assert loans.lend(1 * GB) is not None  # none waits any more


def test_a_loan_of_nothing_is_refused():
    loans, released = loans_of()
    assert loans.lend(0) is None and released == []
