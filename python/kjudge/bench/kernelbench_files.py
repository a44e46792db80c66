"""KernelBench's own output files, so its analysis scripts read a kjudge run unchanged:

eval_results.json   {"<problem id>": [{"sample_id", "compiled", "correctness", "metadata", "runtime",
                    "runtime_stats"}, ...]} sorted by numeric problem id, as KernelBench's
                    eval_from_generations.py writes it (one file per level: ids restart per level).
                    Field meanings follow `kjudge kernelbench-results` (src/cli/result_view.cpp):
                    correctness is every correctness set passing, runtime the candidate's mean ms
                    (-1 when it was not timed); kjudge's verdict is kept in metadata.
baseline_time.json  {"level<L>": {"<file name>": {"mean", "std", "min", "max", "num_trials", "hardware",
                    "device"}}}, the layout of KernelBench's results/timing files, from the reference
                    timings the judge measured."""

from kjudge.v1 import verdict_pb2

_RUNTIME_ERRORS = {"RUNTIME_ERROR", "CUDA_FAULT", "TIMEOUT", "MEMORY_LIMIT"}


def _stats(t, result, device):
    if not t.trials:
        return {}
    return {"mean": t.mean_ms, "std": t.std_ms, "min": t.min_ms, "max": t.max_ms, "num_trials": t.trials,
            "hardware": result.system.device_name, "device": device}


def sample_record(rec, device):
    r = rec["result"]
    verdict = verdict_pb2.Verdict.Name(r.status)
    meta = {"hardware": r.system.device_name, "kjudge_status": verdict, "kjudge_message": r.message}
    passed = sum(1 for s in r.correctness if s.passed)
    if len(r.correctness):
        meta["correctness_trials"] = "(%d / %d)" % (passed, len(r.correctness))
    if verdict == "COMPILE_ERROR":
        meta["compilation_error"] = r.message
    if verdict in _RUNTIME_ERRORS:
        meta["runtime_error"] = r.message
    if verdict == "INCORRECT":
        meta["correctness_issue"] = r.message
    if r.performance.excessive_speedup:
        meta["excessive_speedup"] = True  # as KernelBench's evaluator marks a speedup beyond 10x
    correct = len(r.correctness) > 0 and passed == len(r.correctness)
    timed = correct and r.performance.candidate.trials > 0
    return {"sample_id": rec["sample"], "compiled": verdict not in ("COMPILE_ERROR", "INVALID_JOB"),
            "correctness": correct, "metadata": meta,
            "runtime": r.performance.candidate.mean_ms if timed else -1.0,
            "runtime_stats": _stats(r.performance.candidate, r, device) if timed else {}}


def eval_results(records, level, device):
    """One level's eval_results.json content."""
    out = {}
    for rec in sorted(records, key=lambda x: (x["problem"], x["sample"])):
        if rec["level"] == level:
            out.setdefault(str(rec["problem"]), []).append(sample_record(rec, device))
    return out


def baseline_times(records, device):
    out = {}
    for rec in sorted(records, key=lambda x: (x["level"], x["problem"])):
        t = rec["result"].performance.baseline
        per_level = out.setdefault("level%d" % rec["level"], {})
        if t.trials and rec["file"] not in per_level:
            per_level[rec["file"]] = _stats(t, rec["result"], device)
    return out
