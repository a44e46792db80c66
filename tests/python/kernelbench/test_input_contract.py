"""The input contract (python/kjudge_protocol/input_contract.py): derived sets and per-call
perturbations keep what a problem's inputs structurally are, and still change everything else."""
import torch

from kjudge_protocol import input_contract as contract
from kjudge_protocol import inputs as kin


def upper(n=32):
    return torch.triu(torch.randn(n, n))


def symmetric(n=32):
    a = torch.randn(n, n)
    return (a + a.T) / 2


def simplex(rows=8, n=64):
    return torch.softmax(torch.randn(rows, n), dim=-1)


def test_structures_are_read_off_a_draw():
    assert contract.structure(torch.randn(64, 64)) == ""
    assert contract.structure(upper()) == ""  # zeros need no rule: every variant keeps them
    assert contract.structure(symmetric()) == "symmetric"
    assert contract.structure(simplex()) == "simplex"
    assert contract.structure(torch.ones(128)) == "constant"
    assert contract.structure(torch.randint(0, 2, (256,)).float()) == "discrete"
    assert contract.structure(torch.rand(256)) == ""  # non-negative alone forbids nothing


def test_every_variant_keeps_structural_zeros_and_symmetry():
    torch.manual_seed(0)
    a, s = upper(), symmetric()
    for kind in kin.VARIANTS:
        for seed in range(20):
            (ta, ts), notes = kin.transform([a, s], kind, seed)
            assert torch.equal(torch.tril(ta, -1), torch.zeros_like(ta)), kind  # still upper-triangular
            assert torch.equal(ts, ts.T), kind
            assert any("symmetric" in n for n in notes)
    (ta, _), _ = kin.transform([a, s], "signflip", 1)
    assert (torch.sign(ta) != torch.sign(a)).any()  # the variant still changes the values


def test_probability_rows_constants_and_value_sets_are_kept_as_drawn():
    p, c, m = simplex(), torch.ones(64), torch.randint(0, 2, (256,)).float()
    for kind in kin.VARIANTS:
        (tp, tc, tm), notes = kin.transform([p, c, m], kind, 3)
        assert torch.equal(tp, p) and torch.equal(tc, c) and torch.equal(tm, m)
        assert any("probability simplex" in n for n in notes)


def test_sign_flips_stay_for_non_negative_inputs():
    x = torch.rand(4096)  # a ReLU that returns its input must still fail the signed set
    (t,), notes = kin.transform([x], "signflip", 5)
    assert (t < 0).any() and notes == []


def test_the_same_tensor_passed_twice_gets_one_variant():
    x = torch.randn(128)
    (a, b), notes = kin.transform([x, x.clone()], "signflip", 9)
    assert torch.equal(a, b) and "equals input 0" in notes[0]


def test_spike_lands_on_a_non_zero_position():
    a = upper(16)
    for seed in range(50):
        (t,), _ = kin.transform([a], "spike", seed)
        changed = (t != a).nonzero()
        assert changed.numel() == 2 and changed[0, 0] <= changed[0, 1]  # one element, in the upper triangle


def test_perturbation_keeps_the_contract_and_restores_exactly():
    torch.manual_seed(1)
    a, s, p = upper(64), symmetric(64), simplex(16, 64)
    values = [a.clone(), s.clone(), p.clone()]
    sums = p.sum(-1)
    for call in range(40):
        undo = kin.perturb(values, 1234, call)
        ta, ts, tp = values
        assert torch.equal(torch.tril(ta, -1), torch.zeros_like(ta))
        assert torch.equal(ts, ts.T)
        assert torch.allclose(tp.sum(-1), sums)
        assert not (torch.equal(ta, a) and torch.equal(ts, s) and torch.equal(tp, p))  # the call's inputs differ
        kin.restore(undo)
        assert torch.equal(values[0], a) and torch.equal(values[1], s) and torch.equal(values[2], p)


def test_perturbation_is_a_function_of_the_values_seed_and_call():
    """The worker replays the candidate's perturbation for the audited calls: same inputs, same result."""
    x = torch.randn(8, 300)
    one, two = [x.clone()], [x.clone()]
    kin.perturb(one, 77, 5)
    kin.perturb(two, 77, 5)
    assert torch.equal(one[0], two[0]) and not torch.equal(one[0], x)
