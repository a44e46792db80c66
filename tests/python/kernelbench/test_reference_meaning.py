"""A reference that gives a candidate nothing to be judged against is the job's fault
(python/kjudge_worker/meaning.py), and only positive evidence makes a wrong output a replay
(trivially_wrong in python/kjudge_worker/job.py)."""
import torch

from kjudge_protocol import numerics
from kjudge_worker.job import near_zero, trivially_wrong
from kjudge_worker.meaning import Meaning

TOL = {"atol": 1e-4, "rtol": 1e-4}


def meaning_of(pairs):
    m = Meaning()
    for values, out in pairs:
        m.add(values, out)
    return m.problem()


def test_outputs_non_finite_on_every_set_are_invalid():
    nan = torch.full((4,), float("nan"))
    assert "NaN/Inf" in meaning_of([([torch.randn(4)], nan), ([torch.randn(4)], nan.clone())])
    some = torch.tensor([1.0, float("inf")])
    assert meaning_of([([torch.randn(2)], some), ([torch.randn(2)], torch.randn(2))]) == ""


def test_outputs_that_ignore_the_inputs_are_invalid():
    const = torch.zeros(8)
    assert "does not depend" in meaning_of([([torch.randn(8)], const), ([torch.randn(8)], const.clone())])
    x = torch.randn(8)  # the same inputs giving the same output says nothing
    assert meaning_of([([x], const), ([x.clone()], const.clone())]) == ""
    assert meaning_of([([torch.randn(8)], torch.randn(8)), ([torch.randn(8)], torch.randn(8))]) == ""


def test_trivially_wrong_outputs_and_near_zero_answers_prove_no_replay():
    assert trivially_wrong(torch.zeros(1000))
    assert trivially_wrong(torch.full((1000,), 3.5))
    assert not trivially_wrong(torch.randn(1000))
    torch.manual_seed(0)
    assert near_zero(torch.softmax(torch.randn(1, 1 << 20), -1), TOL)  # zeros pass as this answer
    assert not near_zero(torch.softmax(torch.randn(1, 1 << 10), -1), TOL)


def test_numerics_scoped_sets_the_mode_and_restores():
    numerics.apply(compat=False)
    with numerics.scoped(compat=True):
        assert numerics.current() == numerics.COMPAT
    assert numerics.current() == numerics.STRICT
