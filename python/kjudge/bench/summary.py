"""Numbers of a bench run, per mode: overall, per level and per problem, from the state's records.

Only candidate verdicts count (OK, the candidate's failures, the anti-cheat verdicts); INVALID_JOB
(a reference that fails, a job too large) is the dataset's problem and is listed, not counted.
compiled: any verdict past the build (not COMPILE_ERROR). correct: in strict mode the verdict OK
(every correctness set, legality and anti-cheat checks passed); in compat mode KernelBench's own
definition, every correctness set passed (a DECOY that returns right values counts, as it does in
KernelBench), with its speedup when the judge timed it."""

import math
from collections import Counter, defaultdict

from kjudge import metrics
from kjudge.reward import CHEATS, FAILURES
from kjudge.v1 import verdict_pb2

COUNTED = FAILURES | CHEATS | {"OK"}


def peak_fraction(perf):
    """The candidate's share of the device's roofline: the judge's peak_fraction (KernelBench jobs:
    bytes and the reference's FLOPs against measured peaks), else achieved / measured bandwidth
    (native jobs); None where the judge reported neither (the cpu backend)."""
    if perf.peak_fraction > 0:
        return perf.peak_fraction
    return perf.achieved_gbps / perf.peak_gbps if perf.peak_gbps > 0 else None


def sample_row(record):
    r = record["result"]
    verdict = verdict_pb2.Verdict.Name(r.status)
    if record["mode"] == "compat":
        correct = len(r.correctness) > 0 and all(s.passed for s in r.correctness)
    else:
        correct = verdict == "OK"
    perf = r.performance
    timed = correct and perf.candidate.trials > 0 and perf.speedup > 0
    return {"level": record["level"], "problem": record["problem"], "name": record["name"], "sample": record["sample"],
            "verdict": verdict, "compiled": verdict != "COMPILE_ERROR", "correct": correct,
            "speedup": perf.speedup if timed else None,
            "ref_ms": perf.baseline.median_ms if perf.baseline.trials else None,
            "candidate_ms": perf.candidate.median_ms if timed else None,
            "peak_fraction": peak_fraction(perf) if timed else None,
            "message": r.message}


def aggregate(rows, ps, ks):
    """Metrics over rows (counted verdicts only)."""
    counted = [r for r in rows if r["verdict"] in COUNTED]
    triples = [((r["level"], r["problem"]), r["correct"], r["speedup"]) for r in counted]
    out = {"samples": len(counted), "not_counted": len(rows) - len(counted),
           "problems": len({(r["level"], r["problem"]) for r in counted}),
           "compile_rate": metrics.rate(r["compiled"] for r in counted),
           "correct_rate": metrics.rate(r["correct"] for r in counted),
           "geomean_speedup": metrics.geomean_speedup(triples),
           "fast_p": {_p(p): metrics.fast_p(triples, p) for p in ps},
           "pass_at_k": {str(k): metrics.mean_pass_at_k(triples, k) for k in ks},
           "avg_at_k": {str(k): metrics.mean_avg_at_k(triples, k) for k in ks},
           "verdicts": dict(Counter(r["verdict"] for r in rows).most_common())}
    fractions = [r["peak_fraction"] for r in counted if r["peak_fraction"] is not None]
    out["mean_peak_fraction"] = sum(fractions) / len(fractions) if fractions else None
    return out


def _p(p):
    return ("%g" % p)


def per_problem(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["level"], r["problem"])].append(r)
    table = []
    for (level, problem), rs in sorted(groups.items()):
        speedups = [r["speedup"] for r in rs if r["correct"] and r["speedup"]]
        table.append({"level": level, "problem": problem, "name": rs[0]["name"], "samples": len(rs),
                      "compiled": sum(r["compiled"] for r in rs), "correct": sum(r["correct"] for r in rs),
                      "best_speedup": max(speedups) if speedups else None,
                      "geomean_speedup": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None,
                      "ref_ms": next((r["ref_ms"] for r in rs if r["ref_ms"]), None),
                      "verdicts": dict(Counter(r["verdict"] for r in rs))})
    return table


def summarize(records, modes, ps, ks):
    """{mode: {"overall", "levels": {L: ...}, "problems": [...], "rows": [...]}}"""
    out = {}
    for mode in modes:
        rows = sorted((sample_row(rec) for rec in records if rec["mode"] == mode),
                      key=lambda r: (r["level"], r["problem"], r["sample"]))
        levels = sorted({r["level"] for r in rows})
        out[mode] = {"overall": aggregate(rows, ps, ks),
                     "levels": {str(lv): aggregate([r for r in rows if r["level"] == lv], ps, ks) for lv in levels},
                     "problems": per_problem(rows), "rows": rows}
    return out
