"""Numbers of a bench run, per mode: overall, per level and per problem, from the state's records.

Only candidate verdicts count (OK, the candidate's failures, the anti-cheat verdicts); INVALID_JOB
(a reference that fails, a job too large) is the dataset's problem and is listed, not counted.
compiled: any verdict past the build (not COMPILE_ERROR). correct: in strict mode the verdict OK
(every correctness set, legality and anti-cheat checks passed); in compat mode KernelBench's own
definition, every correctness set passed (a DECOY that returns right values counts, as it does in
KernelBench), with its speedup when the judge timed it.
Repair turns (generations named ..._turn_<T>_...): every metric counts the first answers (turn 0)
only; "turns" says, over problems, the share solved at the first turn, at any turn and by each."""

import math
from collections import Counter, defaultdict

from kjudge import metrics, turns
from kjudge.reward import CHEATS, FAILURES
from kjudge.v1 import verdict_pb2

COUNTED = FAILURES | CHEATS | {"OK"}
DEFAULT_FASTER_THRESHOLD = 1.1  # MooreEval's "Faster" columns: speedup > 1.1x


def peak_fraction(perf):
    """The candidate's share of the device's roofline: the judge's peak_fraction (KernelBench jobs:
    bytes and the reference's FLOPs against measured peaks), else achieved / measured bandwidth
    (native jobs); None where the judge reported neither (the cpu backend)."""
    if perf.peak_fraction > 0:
        return perf.peak_fraction
    return perf.achieved_gbps / perf.peak_gbps if perf.peak_gbps > 0 else None


def optional_field(message, name):
    """A field that newer results carry (e.g. performance.speedup_ci_low), or None: absent from this
    client's schema, or unset (0)."""
    if name not in message.DESCRIPTOR.fields_by_name:
        return None
    return getattr(message, name) or None


def kernelbench_correct(result):
    """KernelBench's correctness: every correctness set passed, whatever kjudge's verdict."""
    return len(result.correctness) > 0 and all(s.passed for s in result.correctness)


def why_counted(mode, verdict, result):
    """One line for the report: why this sample counts as correct or not in this mode."""
    passed, total = sum(s.passed for s in result.correctness), len(result.correctness)
    sets = "%d/%d sets passed" % (passed, total) if total else "no set ran"
    if mode == "compat":
        return "KernelBench: %s (kjudge verdict %s)" % (sets, verdict)
    return "kjudge: verdict %s (%s)" % (verdict, sets)


def speedup_ci(perf):
    """(low, high) of the speedup's confidence interval where the judge reported one, else None."""
    low, high = optional_field(perf, "speedup_ci_low"), optional_field(perf, "speedup_ci_high")
    return (low, high) if low and high else None


def sample_row(record):
    r = record["result"]
    verdict = verdict_pb2.Verdict.Name(r.status)
    correct = kernelbench_correct(r) if record["mode"] == "compat" else verdict == "OK"
    perf = r.performance
    timed = correct and perf.candidate.trials > 0 and perf.speedup > 0
    vs_compile = timed and perf.compiled_baseline.trials > 0 and perf.speedup_vs_compiled > 0
    return {"level": record["level"], "problem": record["problem"], "name": record["name"], "sample": record["sample"],
            "turn": record.get("turn", 0), "verdict": verdict, "compiled": verdict != "COMPILE_ERROR", "correct": correct,
            "kernelbench_correct": kernelbench_correct(r), "why": why_counted(record["mode"], verdict, r),
            "speedup": perf.speedup if timed else None,
            "speedup_ci": speedup_ci(perf) if timed else None,
            "speedup_vs_compile": perf.speedup_vs_compiled if vs_compile else None,
            "ref_ms": perf.baseline.median_ms if perf.baseline.trials else None,
            "compiled_ref_ms": perf.compiled_baseline.median_ms if perf.compiled_baseline.trials else None,
            "candidate_ms": perf.candidate.median_ms if timed else None,
            "peak_fraction": peak_fraction(perf) if timed else None,
            "excessive_speedup": bool(timed and optional_field(perf, "excessive_speedup")),
            "message": r.message}


def faster_rates(counted, threshold):
    """MooreEval's Faster vs Eager and Faster vs Compile over the counted rows; vs Compile is None
    when the judge timed no torch.compile baseline for any of them."""
    problem = [(r["level"], r["problem"]) for r in counted]
    eager = metrics.faster_rate(zip(problem, (r["correct"] for r in counted), (r["speedup"] for r in counted)),
                                threshold)
    compile_timed = any(r["compiled_ref_ms"] for r in counted)
    vs_compile = metrics.faster_rate(
        zip(problem, (r["correct"] for r in counted), (r["speedup_vs_compile"] for r in counted)),
        threshold) if compile_timed else None
    return {"faster_threshold": threshold, "faster_vs_eager": eager, "faster_vs_compile": vs_compile}


def turn_rates(rows):
    """kjudge.turns' rates over a problem's samples and their repairs (counted verdicts only)."""
    return turns.rates_over(((r["level"], r["problem"]), r["turn"], r["correct"])
                            for r in rows if r["verdict"] in COUNTED)


def aggregate(all_rows, ps, ks, faster_threshold=DEFAULT_FASTER_THRESHOLD):
    """Metrics over the first answers of rows (counted verdicts only), and the turn rates of all."""
    rows = [r for r in all_rows if r["turn"] == 0]
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
    out.update(faster_rates(counted, faster_threshold))
    fractions = [r["peak_fraction"] for r in counted if r["peak_fraction"] is not None]
    out["mean_peak_fraction"] = sum(fractions) / len(fractions) if fractions else None
    # KernelBench's own second look: speedups beyond its excessive_speedup_threshold (10x)
    out["excessive_speedups"] = sum(1 for r in counted if r["excessive_speedup"])
    out["turns"] = turn_rates(all_rows)
    return out


def _p(p):
    return ("%g" % p)


def per_problem(rows):
    groups = defaultdict(list)
    for r in rows:
        if r["turn"] == 0:  # first answers, as every metric
            groups[(r["level"], r["problem"])].append(r)
    table = []
    for (level, problem), rs in sorted(groups.items()):
        speedups = [r["speedup"] for r in rs if r["correct"] and r["speedup"]]
        table.append({"level": level, "problem": problem, "name": rs[0]["name"], "samples": len(rs),
                      "compiled": sum(r["compiled"] for r in rs), "correct": sum(r["correct"] for r in rs),
                      "best_speedup": max(speedups) if speedups else None,
                      "geomean_speedup": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None,
                      "ref_ms": next((r["ref_ms"] for r in rs if r["ref_ms"]), None),
                      "compiled_ref_ms": next((r["compiled_ref_ms"] for r in rs if r["compiled_ref_ms"]), None),
                      "verdicts": dict(Counter(r["verdict"] for r in rs))})
    return table


def summarize(records, modes, ps, ks, faster_threshold=DEFAULT_FASTER_THRESHOLD):
    """{mode: {"overall", "levels": {L: ...}, "problems": [...], "rows": [...]}}"""
    out = {}
    for mode in modes:
        rows = sorted((sample_row(rec) for rec in records if rec["mode"] == mode),
                      key=lambda r: (r["level"], r["problem"], r["sample"], r["turn"]))
        levels = sorted({r["level"] for r in rows})
        out[mode] = {"overall": aggregate(rows, ps, ks, faster_threshold),
                     "levels": {str(lv): aggregate([r for r in rows if r["level"] == lv], ps, ks, faster_threshold)
                                for lv in levels},
                     "problems": per_problem(rows), "rows": rows}
    return out
