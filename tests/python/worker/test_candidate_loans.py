"""The preparations' idle part of the device lent to kjudged's candidates
(python/kjudge_worker/candidate_loans.py): never ahead of a preparation, never beyond the device's
room, repaid once, and what torch keeps cached for the worker shrinks by it."""
import threading
import time

from kjudge_worker.candidate_loans import CandidateLoans
from kjudge_worker.prepare_budget import PrepareBudget

GB = 1 << 30


def loans_of(capacity=16 * GB, kept=32 * GB, free=80 * GB):
    released = []  # the keep each release was asked for
    return CandidateLoans(PrepareBudget(capacity), kept, released.append, lambda: free), released


def test_an_idle_budget_lends_and_the_worker_keeps_less_cached_until_repaid():
    loans, released = loans_of()
    assert loans.lend(1, 10 * GB)
    assert loans.lent() == 10 * GB and loans.kept_bytes() == 22 * GB
    assert released == [22 * GB]  # torch's blocks beyond the smaller keep go back before the loan is granted
    assert not loans.lend(2, 7 * GB)  # 10 + 7 > 16
    assert loans.repay(1) == 10 * GB
    assert loans.kept_bytes() == 32 * GB and loans.budget.used == 0


def test_a_repayment_counts_once_and_one_this_worker_never_lent_changes_nothing():
    loans, _ = loans_of()
    assert loans.lend(7, 4 * GB)
    assert loans.repay(8) == 0  # e.g. a loan of the worker this one replaced
    assert loans.budget.used == 4 * GB
    assert loans.repay(7) == 4 * GB
    assert loans.repay(7) == 0
    assert loans.budget.used == 0


def test_a_loan_repaid_before_it_was_asked_for_is_never_granted():
    """kjudged got no answer to a lend and repaid its name: that lend, arriving late, is refused,
    so nothing stays lent that kjudged does not count."""
    loans, _ = loans_of()
    assert loans.repay(3) == 0
    assert not loans.lend(3, GB)
    assert loans.budget.used == 0 and loans.lent() == 0
    assert loans.lend(4, GB) and not loans.lend(4, GB)  # one loan per name


def test_a_loan_the_device_has_no_room_for_is_refused_and_returned():
    loans, _ = loans_of(free=3 * GB)  # e.g. the worker's own large sets in use beyond its part
    assert not loans.lend(1, 4 * GB)
    assert loans.budget.used == 0 and loans.kept_bytes() == 32 * GB
    assert loans.lend(2, 2 * GB)


def test_nothing_is_lent_while_a_preparation_waits_and_it_goes_in_once_repaid():
    loans, _ = loans_of()
    assert loans.lend(1, 12 * GB)
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
    assert not loans.lend(2, 1 * GB)  # 13 of 16 would fit, but the preparation waits
    loans.repay(1)
    t.join(5)
    assert admitted.is_set()
    assert loans.lend(3, 1 * GB)  # none waits any more


def test_a_loan_of_nothing_is_refused():
    loans, released = loans_of()
    assert not loans.lend(1, 0) and released == []


def prepares_without_waiting(budget, nbytes):
    done = threading.Event()

    def prepare():
        with budget.hold(nbytes):
            done.set()

    threading.Thread(target=prepare, daemon=True).start()  # left waiting when it must wait
    return done.wait(2)


def test_with_half_the_budget_lent_a_light_preparation_does_not_wait():
    """kjudged's borrow share of 0.5 (docs/gpu-worker.md): a problem whose inputs are under the
    heavy share of the device prepares in the budget beside the loans, on an H100 and an H200;
    with a byte more lent than leaves it room, it waits."""
    from kjudge_worker import job, prepare_budget
    for total in (int(79.1 * GB), int(139.8 * GB)):
        capacity = int(prepare_budget.PREPARE_SHARE * total)
        light = prepare_budget.estimate(int(job.HEAVY_SET_SHARE * total) - 1, capacity)
        half, _ = loans_of(capacity=capacity)
        assert half.lend(1, capacity // 2)
        assert prepares_without_waiting(half.budget, light), (total, light)
        more, _ = loans_of(capacity=capacity)
        assert more.lend(1, capacity - light + 1)
        assert not prepares_without_waiting(more.budget, light)
