"""kjudge-bench: judge a KernelBench-style generations folder through the kjudge queue.

    kjudge-bench --dataset ~/KernelBench --generations runs/my_run --backend cuda \\
                 --mode both --p 1 1.1 2 --k 1 5 --out runs/my_run/kjudge

Resumable: results go to <out>/state.jsonl as they arrive; a rerun submits only what is missing.
Writes <out>/summary.json, eval_results*.json, baseline_time.json and report.html; prints a summary."""

import argparse
import json
import signal
import sys
import uuid
from pathlib import Path

from kjudge.bench import html_report, kernelbench_files
from kjudge.bench.layout import find_generations, find_problems
from kjudge.bench.progress import Progress
from kjudge.bench.state import State
from kjudge.bench.summary import DEFAULT_FASTER_THRESHOLD, summarize
from kjudge.client import QueueError
from kjudge.jobs import BACKENDS, build_job, default_redis_url, default_tenant
from kjudge.judging import judge_many


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="kjudge-bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True, type=Path,
                    help="KernelBench-style dir, level<L>/<P>_<Name>.py, or a KernelBench clone (its KernelBench/level<L>/)")
    ap.add_argument("--generations", required=True, type=Path,
                    help="runs/<name> dir: level_<L>_problem_<P>_sample_<S>_kernel.py (or .md/.txt completions)")
    ap.add_argument("--out", type=Path, help="output dir (default: <generations>/kjudge-bench)")
    ap.add_argument("--redis", default=default_redis_url(),
                    help="Redis URL, or a kjudge-gateway's http(s):// URL with $KJUDGE_TOKEN (env KJUDGE_REDIS; default: the dev daemon's)")
    ap.add_argument("--tenant", default=default_tenant(), help="tenant (env KJUDGE_TENANT; default dev)")
    ap.add_argument("--backend", default="cuda", choices=sorted(BACKENDS))
    ap.add_argument("--precision", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--mode", default="strict", choices=["strict", "compat", "both"])
    ap.add_argument("--p", type=float, nargs="+", default=[0.0, 1.0, 1.1, 2.0], help="fast_p thresholds")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 5, 10], help="pass@k / avg@k")
    ap.add_argument("--faster-than", type=float, default=DEFAULT_FASTER_THRESHOLD,
                    help="MooreEval's Faster vs Eager / vs Compile: speedup above this (default 1.1)")
    ap.add_argument("--levels", type=int, nargs="+", help="only these levels")
    ap.add_argument("--trials", type=int, help="timed trials per job (default: the judge's)")
    ap.add_argument("--timeout-s", type=float, default=3600.0,
                    help="give up (and cancel) what has no verdict after this long; a rerun retries it")
    ap.add_argument("--chunk", type=int, default=1000, help="jobs in the queue at once (the tenant's quota)")
    ap.add_argument("--priority", type=int, default=0)
    ap.add_argument("--no-judge", action="store_true", help="only report what the state file has")
    return ap.parse_args(argv)


def plan(args):
    """The (sample, mode, reference path) triples still to judge, and every sample's record base."""
    try:
        problems = find_problems(args.dataset)
    except ValueError as e:
        raise SystemExit("kjudge-bench: %s" % e)
    samples = [s for s in find_generations(args.generations) if not args.levels or s.level in args.levels]
    unknown = [s for s in samples if (s.level, s.problem) not in problems]
    if unknown:
        raise SystemExit("kjudge-bench: no reference in %s for %s" % (
            args.dataset, ", ".join(s.path.name for s in unknown[:5])))
    modes = ["strict", "compat"] if args.mode == "both" else [args.mode]
    return problems, samples, modes


def judge_missing(args, state, problems, samples, modes):
    nonce = uuid.uuid4().hex[:8]  # ids unique per invocation: a rerun never meets an old cancel
    todo = [(s, m) for s in samples for m in modes if s.key(m) not in state]
    if not todo:
        return 0
    bar = Progress(len(todo), "judging")
    lost = 0
    for start in range(0, len(todo), args.chunk):
        chunk = todo[start:start + args.chunk]
        jobs, by_id = [], {}
        for s, mode in chunk:
            ref = problems[(s.level, s.problem)]
            source = s.path.read_text()
            # the result carries the turn; its group (kjudge.turns.group_of) is the problem_id
            job = build_job(ref.read_text(), completion=source if s.is_completion else None,
                            candidate=None if s.is_completion else source, backend=args.backend, mode=mode,
                            precision=args.precision, tenant=args.tenant, trials=args.trials, priority=args.priority,
                            job_id="bench-%s-%s-l%d-p%d-s%d%s" % (nonce, mode, s.level, s.problem, s.sample,
                                                                 "-t%d" % s.turn if s.turn else ""),
                            problem_id="level%d/%s" % (s.level, ref.stem), meta={"sample_id": s.sample},
                            turn=s.turn)
            jobs.append(job)
            by_id[job.job_id] = (s, mode, ref)

        def progress(_done, _total, job_id, result):
            s, mode, ref = by_id[job_id]
            kept = state.add({"key": s.key(mode), "mode": mode, "level": s.level, "problem": s.problem,
                              "sample": s.sample, "turn": s.turn, "name": ref.stem, "file": ref.name,
                              "result": result})
            bar.update("" if kept else "(%s not final)" % job_id)

        results = judge_many(jobs, redis_url=args.redis, timeout_s=args.timeout_s, progress=progress)
        lost += sum(1 for r in results if r is None)
    bar.close()
    return lost


def write_outputs(args, state, modes, summary, completeness):
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        dict({m: summary[m] for m in modes}, run=completeness), indent=2, sort_keys=True))
    device = "cpu" if args.backend == "cpu" else "cuda:0"
    records = list(state.records.values())
    levels = sorted({r["level"] for r in records})
    primary = "compat" if "compat" in modes else "strict"  # KernelBench's numbers are compat's
    written = []
    for mode in modes:
        for level in levels:
            name = "eval_results%s%s.json" % ("_level%d" % level if len(levels) > 1 else "",
                                              "" if mode == primary else "_" + mode)
            recs = [r for r in records if r["mode"] == mode and not r.get("turn")]  # KernelBench's files: first answers
            (out / name).write_text(json.dumps(kernelbench_files.eval_results(recs, level, device), indent=4))
            written.append(name)
    (out / "baseline_time.json").write_text(json.dumps(kernelbench_files.baseline_times(records, device), indent=4))
    info = {"dataset": args.dataset, "generations": args.generations, "backend": args.backend,
            "modes": ", ".join(modes), "redis": args.redis, "tenant": args.tenant,
            "judged": "%(judged)d of %(wanted)d jobs" % completeness}
    title = "kjudge-bench: %s" % args.generations.name
    if not completeness["complete"]:
        title += " (INCOMPLETE%s)" % (": " + completeness["stopped"] if completeness["stopped"] else "")
    html = html_report.render(summary, modes, args.p, args.k, title, info)
    (out / "report.html").write_text(html)
    return written + ["baseline_time.json", "summary.json", "report.html"]


def print_summary(summary, modes, ps, ks, file=None):
    file = file or sys.stdout  # looked up when called: a caller may have redirected it

    def f(v, pct=True):
        return "-" if v is None else ("%.1f%%" % (100 * v) if pct else "%.3g" % v)

    threshold = summary[modes[0]]["overall"]["faster_threshold"]
    labels = (["samples", "compile rate", "correctness rate"] + ["fast_%g" % p for p in ps] +
              ["pass@%d" % k for k in ks] + ["avg@%d" % k for k in ks] +
              ["faster vs eager >%gx" % threshold, "faster vs compile >%gx" % threshold] +
              ["geomean speedup", "fraction of peak", "beyond 10x (KB's excessive)"])
    cols = []
    for m in modes:
        a = summary[m]["overall"]
        cols.append([str(a["samples"]), f(a["compile_rate"]), f(a["correct_rate"])] +
                    [f(a["fast_p"]["%g" % p]) for p in ps] + [f(a["pass_at_k"][str(k)]) for k in ks] +
                    [f(a["avg_at_k"][str(k)]) for k in ks] + [f(a["faster_vs_eager"]), f(a["faster_vs_compile"])] +
                    [f(a["geomean_speedup"], pct=False), f(a["mean_peak_fraction"]), str(a["excessive_speedups"])])
    print("%-24s" % "" + "".join("%12s" % m for m in modes), file=file)
    for i, label in enumerate(labels):
        print("%-24s" % label + "".join("%12s" % c[i] for c in cols), file=file)
    print_turns(summary, modes, f, file)
    print_levels(summary, modes, threshold, f, file)
    print("\nper problem (correct/samples, best speedup, verdicts):", file=file)
    by_key = {}
    for m in modes:
        for p in summary[m]["problems"]:
            by_key.setdefault((p["level"], p["problem"], p["name"]), []).append((m, p))
    for (level, _pid, name), entries in sorted(by_key.items()):
        cells = []
        for m, p in entries:
            best = "-" if p["best_speedup"] is None else "%.2fx" % p["best_speedup"]
            verdicts = " ".join("%s:%d" % kv for kv in sorted(p["verdicts"].items()))
            cells.append("%s %d/%d %s %s" % (m, p["correct"], p["samples"], best, verdicts))
        print("  L%d %-32s %s" % (level, name[:32], " | ".join(cells)), file=file)


def print_turns(summary, modes, f, file):
    """Repair turns, where the generations have any: over problems, solved by a first answer and by
    any turn (the metrics above count first answers only)."""
    turns = {m: summary[m]["overall"]["turns"] for m in modes}
    if not any(len(t["by_turn"]) > 1 for t in turns.values()):
        return
    print("\nrepair turns (problems solved; the rates above count turn-0 answers only):", file=file)
    for m, t in turns.items():
        by_turn = " ".join("%s:%s" % (k, f(v)) for k, v in sorted(t["by_turn"].items(), key=lambda kv: int(kv[0])))
        print("  %-8s first turn %s, best of turns %s, by turn %s (%d problems)"
              % (m, f(t["first_turn"]), f(t["best_of_turns"]), by_turn, t["groups"]), file=file)


def print_levels(summary, modes, threshold, f, file):
    """MooreEval's table per level: Faster vs Eager / vs Compile beside the correctness rate."""
    print("\nper level (correct, faster vs eager, faster vs compile; >%gx):" % threshold, file=file)
    levels = sorted({lv for m in modes for lv in summary[m]["levels"]}, key=int)
    for lv in levels:
        cells = []
        for m in modes:
            a = summary[m]["levels"].get(lv)
            if a:
                cells.append("%s %s %s %s" % (m, f(a["correct_rate"]), f(a["faster_vs_eager"]),
                                              f(a["faster_vs_compile"])))
        print("  level %-4s %s" % (lv, " | ".join(cells)), file=file)


class Interrupted(BaseException):
    """SIGTERM (a batch system's time limit) or Ctrl-C while judging: report what was judged."""


def _raise_interrupted(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def judge_until_stopped(args, state, problems, samples, modes):
    """(jobs given up on, why judging stopped early or None). Results already in the state stay."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        return judge_missing(args, state, problems, samples, modes), None
    except (Interrupted, KeyboardInterrupt) as e:
        return 0, "interrupted (%s)" % (str(e) or "SIGINT")
    finally:
        signal.signal(signal.SIGTERM, previous)


def report(args, state, samples, modes, stopped):
    """Writes and prints the summary of what the state holds for this run's samples; marks it
    incomplete when some have no final result. Returns how many have none."""
    wanted = {s.key(m) for s in samples for m in modes}
    records = [r for k, r in state.records.items() if k in wanted]
    missing = len(wanted) - len(records)
    summary = summarize(records, modes, args.p, args.k, args.faster_than)
    completeness = {"complete": not missing, "judged": len(records), "wanted": len(wanted), "stopped": stopped}
    written = write_outputs(args, _Only(records), modes, summary, completeness)
    if missing:
        print("INCOMPLETE: %d of %d jobs judged%s\n" % (len(records), len(wanted), "; " + stopped if stopped else ""))
    print_summary(summary, modes, args.p, args.k)
    print("\nwrote %s in %s" % (", ".join(written), args.out))
    return missing


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.out = args.out or args.generations / "kjudge-bench"
    problems, samples, modes = plan(args)
    if not samples:
        print("kjudge-bench: no generations in %s" % args.generations, file=sys.stderr)
        return 2
    state = State(args.out / "state.jsonl")
    lost, stopped = 0, None
    if not args.no_judge:
        try:
            lost, stopped = judge_until_stopped(args, state, problems, samples, modes)
        except QueueError as e:
            print("kjudge-bench: the queue failed: %s (results so far are kept; rerun to resume)" % e, file=sys.stderr)
            stopped = "the queue failed"
    missing = report(args, state, samples, modes, stopped)
    if stopped == "the queue failed":
        return 3
    if missing:
        print("kjudge-bench: %d jobs have no final result (%d given up on%s); rerun to retry them"
              % (missing, lost, ", " + stopped if stopped else ""), file=sys.stderr)
        return 130 if stopped else 1
    return 0


class _Only:
    """The state's records restricted to this run's samples."""

    def __init__(self, records):
        self.records = {r["key"]: r for r in records}
