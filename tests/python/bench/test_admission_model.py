"""bench/admission_model: its replay of DeviceBudget's rules on hand-made phases whose makespans
can be worked out by hand."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("admission_model", ROOT / "bench/admission_model/model.py")
model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model)
PRE, POST = model.PRE_SECONDS, model.POST_SECONDS


def job(est, hold):
    return {"problem": "p", "est": est, "hold": hold}


def test_jobs_that_fit_together_run_together_and_one_over_the_capacity_runs_alone():
    assert abs(model.replay([job(4, 2.0)] * 2, capacity=10) - (PRE + 2.0 + POST)) < 0.05
    assert abs(model.replay([job(4, 2.0), job(12, 2.0)], capacity=10) - (PRE + 4.0 + POST)) < 0.05


def test_largest_first_puts_the_large_jobs_first_and_shortens_the_batch():
    # all four ask at once; in arrival order (strict) each 9 waits for the one before it, and the
    # long 3 last waits behind the second 9; largest first runs the two 9s first, then both 3s together
    jobs = [job(3, 2.0), job(9, 2.0), job(9, 2.0), job(3, 6.0)]
    arrival = model.replay(jobs, capacity=10, backfill=0)
    largest = model.replay(jobs, capacity=10, backfill=0, largest_first=True)
    assert abs(arrival - (PRE + 2.0 + 2.0 + 2.0 + 6.0 + POST)) < 0.05
    assert abs(largest - (PRE + 2.0 + 2.0 + 6.0 + POST)) < 0.05


def test_a_head_borrows_its_shortfall_from_the_lendable_and_none_beyond_it():
    # two 6s in 10: one after the other; with 2 to lend, together (the second borrows 2)
    jobs = [job(6, 2.0), job(6, 2.0)]
    assert abs(model.replay(jobs, capacity=10) - (PRE + 4.0 + POST)) < 0.05
    assert abs(model.replay(jobs, capacity=10, lendable=2) - (PRE + 2.0 + POST)) < 0.05
    assert abs(model.replay(jobs, capacity=10, lendable=1.9) - (PRE + 4.0 + POST)) < 0.05
