#!/usr/bin/env python3
"""The tables of a bench/driver_calls run: python3 table.py DIR (summary.jsonl, calls.jsonl)."""
import json
import os
import sys

VMM = ("cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "cuMemExportToShareableHandle",
       "cuMemImportFromShareableHandle", "cuMemUnmap", "cuMemAddressFree", "cuMemRelease")


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def f(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def main(d):
    summ, calls = load(os.path.join(d, "summary.jsonl")), {c["config"]: c for c in load(os.path.join(d, "calls.jsonl"))}
    out = []
    out.append("| config | workers | pool | jobs ok | makespan s | jobs/s | worker driver calls / job | worker driver s / job "
               "| candidate driver calls / job | candidate driver s / job | worker step s / job median (mean) "
               "| judge wait s / job median | hand-over buffers made / reused | sets passed |")
    out.append("|" + "---|" * 14)
    for s in summ:
        if "jobs" not in s:
            out.append(f"| {s['config']} | {s['workers']} | {'on' if s['pool'] else 'off'} | not finished |" + " |" * 10)
            continue
        ho = s.get("hand_over") or {}
        out.append(f"| {s['config']} | {s['workers']} | {'on' if s['pool'] else 'off'} | {s['ok']}/{s['jobs']} "
                   f"| {f(s['makespan_s'], 1)} | {f(s['jobs_per_s'], 2)} | {f(s['worker_calls_per_job'], 0)} "
                   f"| {f(s['worker_call_s_per_job'], 4)} | {f(s['cand_calls_per_job'], 0)} | {f(s['cand_call_s_per_job'], 4)} "
                   f"| {f(s['step_s_median'])} ({f(s['step_s_mean'])}) | {f(s['judge_s_median'])} "
                   f"| {ho.get('made', '-')} / {ho.get('reused', '-')} | {s['passed_sets']}/{s['sets']} |")
    out.append("")
    # the worker's steps, median per job (s)
    steps = sorted({k for s in summ for k in s.get("steps_median", {})})
    if steps:
        out.append("Worker steps per job, median (mean), seconds:")
        out.append("")
        out.append("| config | " + " | ".join(steps) + " |")
        out.append("|---|" + "---|" * len(steps))
        for s in summ:
            if "steps_median" in s:
                out.append(f"| {s['config']} | " + " | ".join(
                    f"{f(s['steps_median'].get(k), 4)} ({f(s['steps_mean'].get(k), 4)})" for k in steps) + " |")
        out.append("")
    # driver functions, the worker's side: calls per job and microseconds per call
    for side in ("worker", "candidate"):
        fns = {}
        for c in calls.values():
            for fn, (n, sec) in c[side].items():
                fns[fn] = fns.get(fn, 0.0) + sec
        top = sorted(fns, key=lambda k: -fns[k])[:16]
        for fn in VMM:
            if fn in fns and fn not in top:
                top.append(fn)
        if not top:
            continue
        cfgs = [s["config"] for s in summ if s["config"] in calls]
        out.append(f"Driver functions in the {side} processes: calls per job / ms per job / us per call "
                   "(the largest by time over the run, and every VMM call):")
        out.append("")
        out.append("| function | " + " | ".join(cfgs) + " |")
        out.append("|---|" + "---|" * len(cfgs))
        for fn in top:
            cells = []
            for cfg in cfgs:
                c = calls[cfg]
                n, sec = c[side].get(fn, (0, 0.0))
                j = max(1, c["jobs"])
                cells.append(f"{n / j:.1f} / {1e3 * sec / j:.2f} / {1e6 * sec / n:.1f}" if n else "0")
            out.append(f"| {fn} | " + " | ".join(cells) + " |")
        out.append("")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
