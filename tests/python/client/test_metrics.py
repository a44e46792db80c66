"""kjudge.metrics against values computed by hand."""

import math

import pytest

from kjudge import metrics


def test_pass_at_k_by_hand():
    # n=5, c=2, k=1: 1 - C(3,1)/C(5,1) = 1 - 3/5
    assert metrics.pass_at_k(5, 2, 1) == pytest.approx(0.4)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert metrics.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # n=4, c=1, k=3: 1 - C(3,3)/C(4,3) = 1 - 1/4
    assert metrics.pass_at_k(4, 1, 3) == pytest.approx(0.75)
    assert metrics.pass_at_k(3, 0, 2) == 0.0
    assert metrics.pass_at_k(3, 2, 2) == 1.0  # n - c < k: every draw of 2 has a correct one
    with pytest.raises(ValueError):
        metrics.pass_at_k(2, 1, 3)


SAMPLES = [  # (problem, correct, speedup)
    ("a", True, 2.0), ("a", True, 0.5), ("a", False, None), ("a", False, None),
    ("b", True, 1.05), ("b", False, None),
    ("c", True, 4.0),
]


def test_means_over_problems():
    # pass@1: a 2/4, b 1/2, c 1/1 -> (0.5 + 0.5 + 1) / 3
    assert metrics.mean_pass_at_k(SAMPLES, 1) == pytest.approx(2 / 3)
    # pass@2 over a and b only: a 1 - C(2,2)/C(4,2) = 5/6, b 1 - 0 = 1 -> 11/12
    assert metrics.mean_pass_at_k(SAMPLES, 2) == pytest.approx(11 / 12)
    assert metrics.mean_pass_at_k(SAMPLES, 5) is None
    # avg@2 over a and b: (2/4 + 1/2) / 2
    assert metrics.mean_avg_at_k(SAMPLES, 2) == pytest.approx(0.5)


def test_fast_p_counts_all_samples_in_the_denominator():
    assert metrics.fast_p(SAMPLES, 0.0) == pytest.approx(4 / 7)  # the correctness rate
    assert metrics.fast_p(SAMPLES, 1.0) == pytest.approx(3 / 7)  # 2.0, 1.05, 4.0
    assert metrics.fast_p(SAMPLES, 1.1) == pytest.approx(2 / 7)
    assert metrics.fast_p(SAMPLES, 4.0) == 0.0  # strictly greater
    assert metrics.fast_p([], 1.0) is None


def test_geomean_of_correct_speedups():
    # (2 * 0.5 * 1.05 * 4) ** (1/4)
    assert metrics.geomean_speedup(SAMPLES) == pytest.approx((4.2) ** 0.25)
    assert metrics.geomean_speedup([("a", False, 3.0)]) is None
    assert math.isclose(metrics.geomean_speedup([("a", True, 2.0), ("b", True, 8.0)]), 4.0)


def test_rate():
    assert metrics.rate([True, False, True, True]) == 0.75
    assert metrics.rate([]) is None
