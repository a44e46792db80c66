"""The worker prepares jobs together as far as their transients fit, in arrival order
(python/kjudge_worker/prepare_budget.py)."""
import threading
import time

from kjudge_worker import prepare_budget
from kjudge_worker.prepare_budget import PrepareBudget

GB = 1 << 30


def test_small_jobs_prepare_together_a_large_or_unknown_one_alone():
    cap = 16 * GB
    assert prepare_budget.estimate(1 << 20, cap) == 4 * (1 << 20) + (256 << 20)
    assert prepare_budget.estimate(6 * GB, cap) == cap  # KernelBench's 6.4 GB sets: the whole budget
    assert prepare_budget.estimate(None, cap) == cap


def hold_in_thread(budget, nbytes, log, name, seconds):
    def run():
        with budget.hold(nbytes):
            log.append(("in", name, time.monotonic()))
            time.sleep(seconds)
            log.append(("out", name, time.monotonic()))
    t = threading.Thread(target=run)
    t.start()
    return t


def test_jobs_that_fit_overlap_and_one_that_does_not_waits_for_them():
    budget, log = PrepareBudget(10), []
    a = hold_in_thread(budget, 4, log, "a", 0.3)
    b = hold_in_thread(budget, 4, log, "b", 0.3)
    time.sleep(0.1)
    c = hold_in_thread(budget, 10, log, "c", 0.1)
    for t in (a, b, c):
        t.join()
    events = [(kind, name) for kind, name, _ in log]
    assert events.index(("in", "b")) < events.index(("out", "a"))  # a and b together
    assert events.index(("in", "c")) > max(events.index(("out", "a")), events.index(("out", "b")))


def test_a_large_job_is_not_overtaken_by_small_ones_that_come_after_it():
    budget, log = PrepareBudget(10), []
    a = hold_in_thread(budget, 4, log, "a", 0.3)
    time.sleep(0.05)
    big = hold_in_thread(budget, 10, log, "big", 0.05)  # waits for a
    time.sleep(0.05)
    small = hold_in_thread(budget, 1, log, "small", 0.05)  # would fit beside a, but came after big
    for t in (a, big, small):
        t.join()
    order = [name for kind, name, _ in log if kind == "in"]
    assert order == ["a", "big", "small"]


def test_a_request_over_the_capacity_is_admitted_alone_not_forever_refused():
    budget = PrepareBudget(10)
    with budget.hold(50):
        assert budget.used == 10
    assert budget.used == 0
