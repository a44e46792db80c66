"""Benchmark metrics over judged samples, as KernelBench and its successors define them.

A sample is a (problem, correct, speedup) triple; speedup = reference time / candidate time and is
only meaningful for correct samples.

  fast_p        fraction of ALL samples that are correct and have speedup > p (KernelBench);
                fast_0 is the correctness rate, p = 1.1 is MooreEval's "Faster Rate".
  pass@k        per problem with n samples of which c are correct: 1 - C(n-c, k) / C(n, k)
                (the unbiased estimator of Chen et al. 2021), averaged over problems with n >= k.
  avg@k         per problem: c / n, the expected fraction of correct samples among k drawn
                (independent of k), averaged over problems with n >= k.
  faster rate   MooreEval's "Faster vs Eager" / "Faster vs Compile": per problem, the fraction
                of its samples that are correct with a speedup > threshold (1.1 by default) over
                eager PyTorch (or over torch.compile), averaged over problems. With one sample a
                problem it is the share of problems solved faster; with n it is that share's
                expectation for one sample drawn per problem (as Avg@n is for correctness).
  geomean       geometric mean of the speedups of correct samples.
"""

import math
from collections import defaultdict


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem: n samples, c correct."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError("pass_at_k needs 0 <= c <= n and 1 <= k <= n (n=%d c=%d k=%d)" % (n, c, k))
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _per_problem(samples):
    counts = defaultdict(lambda: [0, 0])  # problem -> [n, c]
    for problem, correct, _speedup in samples:
        counts[problem][0] += 1
        counts[problem][1] += 1 if correct else 0
    return counts


def mean_pass_at_k(samples, k: int):
    """pass@k averaged over the problems that have at least k samples; None when none has."""
    vals = [pass_at_k(n, c, k) for n, c in _per_problem(samples).values() if n >= k]
    return sum(vals) / len(vals) if vals else None


def mean_avg_at_k(samples, k: int):
    """avg@k averaged over the problems that have at least k samples; None when none has."""
    vals = [c / n for n, c in _per_problem(samples).values() if n >= k]
    return sum(vals) / len(vals) if vals else None


def fast_p(samples, p: float):
    """Fraction of all samples that are correct with speedup > p; None for no samples."""
    samples = list(samples)
    if not samples:
        return None
    return sum(1 for _pr, correct, s in samples if correct and s is not None and s > p) / len(samples)


def faster_rate(samples, threshold: float = 1.1):
    """MooreEval's Faster rate (module docstring): samples are (problem, correct, speedup) with the
    speedup over the baseline in question; None for no samples."""
    per_problem = defaultdict(list)
    for problem, correct, s in samples:
        per_problem[problem].append(bool(correct and s is not None and s > threshold))
    if not per_problem:
        return None
    return sum(sum(f) / len(f) for f in per_problem.values()) / len(per_problem)


def geomean_speedup(samples):
    """Geometric mean speedup over correct samples with a speedup; None when there are none."""
    logs = [math.log(s) for _pr, correct, s in samples if correct and s is not None and s > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def rate(flags):
    """Fraction of true values; None for an empty list."""
    flags = list(flags)
    return sum(1 for f in flags if f) / len(flags) if flags else None
