"""Issue 24's RL-step benchmark: one batch of never-seen candidates (bench/fidelity/variants.py:
>= 128 distinct sources over the corpus's problems), each submitted once in strict mode with cold
caches, judged three ways on one node; bench/rlstep/run drives the daemons.

  a        kjudge alone: every job submitted at once to one judging kjudged (it builds and judges)
  b-build  builds first: the same jobs submitted with only a build-only kjudged running; ends when
           it has built every job (build.done in its log) or stalls
  b-judge  then a judging kjudged that takes the builds from the store ([build] local_max = 0)
  c        KernelBench's evaluator as its scripts do it: parallel builds (build_compile_cache, one
           process per core), then eval_kernel_against_ref one candidate at a time
  report   the table: per run makespan, candidates per hour per GPU, GPU busy share and device memory max (nvidia-smi),
           node CPU-seconds per candidate (/proc/stat over the run's window), verdicts

Each step appends rows to OUT/rows.jsonl and its window (start, end, node CPU-s) to
OUT/windows.jsonl; `report` reads both and smi.csv.

Usage: rlstep.py STEP --manifest M --dataset D --out OUT [--redis URL] [--kb-src DIR] [--limit N]"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "fidelity"))
from fidelity import UNSCORED, QueueJudge, summarize_result  # noqa: E402
from variants import spread_evenly  # noqa: E402

TENANT = "rlstep"


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def node_cpu_seconds():
    """User + system + nice CPU time of the whole node (every process: daemons, sandboxes,
    compilers, KernelBench's processes), in seconds."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    user, nice, system = (int(x) for x in fields[:3])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


class Window:
    def __init__(self, out, step):
        self.out, self.step = out, step

    def __enter__(self):
        self.t0, self.cpu0 = time.time(), node_cpu_seconds()
        # an opening line: a step stopped before its end (a device session's time) still has its start
        with open(os.path.join(self.out, "windows.jsonl"), "a") as f:
            f.write(json.dumps({"step": self.step, "start": self.t0}) + "\n")
        return self

    def __exit__(self, *exc):
        with open(os.path.join(self.out, "windows.jsonl"), "a") as f:
            f.write(json.dumps({"step": self.step, "start": self.t0, "end": time.time(),
                                "cpu_s": node_cpu_seconds() - self.cpu0}) + "\n")


def add_row(out, row):
    with open(os.path.join(out, "rows.jsonl"), "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


def load(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def entries_of(a):
    entries = json.load(open(a.manifest))
    return entries[:a.limit] if a.limit else entries


def candidate_path(a, e):
    return e["candidate"] if os.path.isabs(e["candidate"]) else os.path.join(os.path.dirname(a.manifest), e["candidate"])


def submit_all(a, judge, step):
    jobs = {}
    for e in entries_of(a):
        jid = "rl-%s-%s" % (step.split("-")[0], uuid.uuid4().hex[:12])
        judge.submit(jid, os.path.join(a.dataset, e["problem"]), candidate_path(a, e), "strict", "rl-" + step,
                     e["problem"], {"candidate": e["candidate"], "step": step})
        jobs[jid] = (e, time.time())
    json.dump({j: e["candidate"] for j, (e, _) in jobs.items()}, open(os.path.join(a.out, "jobs-%s.json" % step), "w"))
    log("%s: %d jobs submitted" % (step, len(jobs)))
    return jobs


def wait_all(a, judge, step, jobs):
    deadline = time.monotonic() + a.timeout_s
    while jobs and time.monotonic() < deadline:
        for jid, r in judge.poll(list(jobs)).items():
            e, t0 = jobs.pop(jid)
            row = {"step": step, "candidate": e["candidate"], "problem": e["problem"], "job_id": jid,
                   "done_at": time.time(), "wall_s": round(time.time() - t0, 2), **summarize_result(r),
                   "phase_seconds": (r or {}).get("phaseSeconds", {})}
            add_row(a.out, row)
            log("%s %-60s %-12s %s" % (step, e["candidate"][-60:], row["verdict"], row.get("message", "")[:80]))
    for jid, (e, _) in jobs.items():
        judge.cancel(jid)
        add_row(a.out, {"step": step, "candidate": e["candidate"], "problem": e["problem"], "job_id": jid,
                        "verdict": "NO_RESULT", "message": "no result within %d s (cancelled)" % a.timeout_s})
    if jobs:
        log("%s: %d jobs without a result after %d s" % (step, len(jobs), a.timeout_s))


def step_a(a):
    judge = QueueJudge(a.redis, TENANT, a.kjudge)
    with Window(a.out, "a"):
        wait_all(a, judge, "a", submit_all(a, judge, "a"))


def step_b_build(a):
    """Submits with only the build node up and waits until its log has a build.done per job, or
    nothing new for --stall-s."""
    judge = QueueJudge(a.redis, TENANT, a.kjudge)
    with Window(a.out, "b-build"):
        jobs = submit_all(a, judge, "b")
        last, seen = time.monotonic(), -1
        while time.monotonic() - last < a.stall_s:
            done = builds_done(a.build_log, set(jobs))
            if done != seen:
                seen, last = done, time.monotonic()
                log("b-build: %d of %d built" % (done, len(jobs)))
            if done >= len(jobs):
                break
            time.sleep(1)


def builds_done(log_path, job_ids):
    done = set()
    for line in open(log_path, errors="replace") if os.path.exists(log_path) else []:
        if '"build.done"' in line:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("job_id", rec.get("job")) in job_ids:
                done.add(rec.get("job_id", rec.get("job")))
    return len(done)


def step_b_judge(a):
    """The GPU phase on GPUs 0..--gpus-1: the jobs b-build queued, or (--resubmit, a later GPU
    phase) the batch submitted again, its builds then all in the store."""
    judge = QueueJudge(a.redis, TENANT, a.kjudge)
    label = a.label or "g%d" % a.gpus
    step = "b-" + label
    with Window(a.out, "b-judge-" + label):
        if a.resubmit:
            jobs = submit_all(a, judge, step)
        else:
            by_candidate = {e["candidate"]: e for e in entries_of(a)}
            jobs = {j: (by_candidate[c], time.time()) for j, c in json.load(open(os.path.join(a.out, "jobs-b.json"))).items()}
        wait_all(a, judge, step, jobs)


def kb_subset(entries, n):
    """n entries spread evenly over the manifest (which lists variants problem by problem), so a
    device session too short for KernelBench's sequential evaluation of the whole batch still
    samples every part of it; n = 0: all."""
    return spread_evenly(entries, n)


def step_c(a):
    """KernelBench's evaluator: its parallel builds, then one candidate at a time (kb_eval.py)."""
    kb_eval = os.path.join(REPO, "bench", "fidelity", "kb_eval.py")
    entries = kb_subset(entries_of(a), a.kb_n)
    root = os.path.join(a.out, "kb_build")
    pairs = [{"name": e["candidate"], "candidate": candidate_path(a, e),
              "build_dir": os.path.join(root, e["candidate"].replace("/", "__").replace(".py", ""))} for e in entries]
    json.dump(pairs, open(os.path.join(a.out, "kb_pairs.json"), "w"))
    with Window(a.out, "c-build"):
        subprocess.run([sys.executable, kb_eval, "--kb-src", a.kb_src, "--build", "--pairs",
                        os.path.join(a.out, "kb_pairs.json"), "--processes", str(a.kb_processes)],
                       stdout=open(os.path.join(a.out, "kb_builds.jsonl"), "a"), stderr=subprocess.STDOUT,
                       timeout=a.timeout_s)
    log("c: builds done")
    with Window(a.out, "c-eval"):
        for e, pair in zip(entries, pairs):
            t0 = time.time()
            p = subprocess.run([sys.executable, kb_eval, "--kb-src", a.kb_src, "--reference",
                                os.path.join(a.dataset, e["problem"]), "--candidate", pair["candidate"],
                                "--build-dir", pair["build_dir"]], capture_output=True, text=True, timeout=600)
            lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"error": (p.stderr or "no output")[-300:]}
            add_row(a.out, {"step": "c", "candidate": e["candidate"], "problem": e["problem"], "done_at": time.time(),
                            "wall_s": round(time.time() - t0, 2),
                            "verdict": kb_verdict(row), "speedup": row.get("speedup", 0.0), "kb": row})
            log("c %-60s %-12s %.1f s" % (e["candidate"][-60:], kb_verdict(row), time.time() - t0))


def kb_verdict(row):
    if row.get("error"):
        return "KB_ERROR"
    if not row.get("compiled"):
        return "COMPILE_ERROR"
    return "OK" if row.get("correctness") else "INCORRECT"


# ---------------------------------------------------------------- report

def smi_rows(path):
    """[(unix time, GPU index, util %, memory used MiB)] from nvidia-smi's csv (timestamp, index,
    utilization.gpu, memory.used; files without the index column are GPU 0's, memory then None)."""
    out = []
    for line in open(path) if os.path.exists(path) else []:
        parts = [p.strip() for p in line.split(",")]
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
            if len(parts) >= 4:
                out.append((t.timestamp(), int(parts[1]), float(parts[2]), float(parts[3])))
            else:
                out.append((t.timestamp(), 0, float(parts[1]), None))
        except (ValueError, IndexError):
            continue
    return out


def gpu_share(smi, start, end, gpus=1):
    """(mean utilization %, share of samples with a kernel running) of GPUs 0..gpus-1 over [start, end]."""
    xs = [u for t, g, u, _ in smi if start <= t <= end and g < gpus]
    if not xs:
        return None, None
    return statistics.mean(xs), sum(1 for u in xs if u > 0) / len(xs)


def device_memory_max_gib(smi, start, end, gpus=1):
    """The most device memory any of GPUs 0..gpus-1 held over [start, end] (GiB; None: not sampled):
    how close the candidates' admission ran the device to its size."""
    xs = [m for t, g, _, m in smi if start <= t <= end and g < gpus and m is not None]
    return max(xs) / 1024 if xs else None


def ended_windows(windows, rows):
    """Every window with an end. One that has only its opening line was stopped: it ends at its last
    verdict and is marked stopped (its CPU-s unknown). Verdicts of a run whose last step has no window
    at all (runs from before opening lines were written) get a stopped one from their own submit and
    done times. Which rows are a window's verdicts is run_names' mapping."""
    runs = run_names(windows)
    verdict_step = {step: v for _, steps, v, _ in runs for step in steps}
    ended = [w for w in windows if "end" in w]
    closed = {(w["step"], w["start"]) for w in ended}
    for w in windows:
        if "end" not in w and (w["step"], w["start"]) not in closed:
            done = [r["done_at"] for r in rows if r["step"] == verdict_step.get(w["step"]) and r.get("done_at", 0) >= w["start"]]
            ended.append({**w, "end": max(done, default=w["start"]), "cpu_s": None, "stopped": True})
    opened = {w["step"] for w in windows}
    for _, steps, v, _ in runs:
        rs = [r for r in rows if r["step"] == v and "wall_s" in r]
        if rs and steps[-1] not in opened:
            ended.append({"step": steps[-1], "start": min(r["done_at"] - r["wall_s"] for r in rs),
                          "end": max(r["done_at"] for r in rs), "cpu_s": None, "stopped": True})
    return ended


def run_names(windows):
    """(name, the steps whose windows make its makespan, the step whose rows are its verdicts, GPUs
    it ran on) per run. Run b has one GPU phase per GPU count and setting (b-judge-g<n>[-share<x>]
    [-backfill<s>], rows b-g<n>[-share<x>][-backfill<s>][-<worker>]: the run's "n:share~s@worker"),
    in the order they ran."""
    runs = [("a: kjudge alone", ["a"], "a", 1), ("b: builds supplied (build phase)", ["b-build"], None, 1)]
    for label in dict.fromkeys(w["step"][len("b-judge-"):] for w in windows if w["step"].startswith("b-judge-g")):
        n, share, backfill, worker = re.match(r"g(\d+)(?:-share([\d.]+))?(?:-backfill([\d.]+))?(?:-(.+))?$",
                                              label).groups()
        n = int(n)
        runs.append(("b: builds supplied (GPU phase, %d GPU%s%s%s%s)" % (
            n, "s" if n > 1 else "", ", candidate share " + share if share else "",
            ", backfill %s s" % backfill if backfill else "", ", " + worker if worker else ""),
                     ["b-judge-" + label], "b-" + label, n))
    return runs + [("c: KernelBench (builds, then evaluation)", ["c-build", "c-eval"], "c", 1)]


def run_table(rows, windows, smi, submitted, kb_n):
    """One line per run of run_names. Runs a and b submit the whole manifest (`submitted`
    candidates), c its subset (`kb_n`)."""
    table = []
    for name, steps, verdict_step, gpus in run_names(windows):
        ws = [w for w in windows if w["step"] in steps]
        if not ws:
            continue
        start, end = min(w["start"] for w in ws), max(w["end"] for w in ws)
        span = sum(w["end"] - w["start"] for w in ws)
        rs = [r for r in rows if r["step"] == verdict_step] if verdict_step else []
        judged = [r for r in rs if r.get("verdict") not in UNSCORED | {"KB_ERROR"}]  # KB_ERROR: its evaluator's own failure
        counts = {}
        for r in rs:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        util, busy = gpu_share(smi, start, end, gpus)
        n = kb_n if verdict_step == "c" else submitted
        cpu = None if any(w["cpu_s"] is None for w in ws) else sum(w["cpu_s"] for w in ws)
        stopped = any(w.get("stopped") for w in ws)
        table.append({"run": name + (" (stopped)" if stopped else ""), "step": verdict_step, "stopped": stopped, "gpus": gpus, "makespan_s": span, "candidates": n, "judged": len(judged),
                      "per_hour_per_gpu": (len(judged) / span * 3600 / gpus) if span and judged else None,
                      "gpu_util_mean": util, "gpu_busy_share": busy,
                      "device_memory_max_gib": device_memory_max_gib(smi, start, end, gpus),
                      "cpu_s_per_candidate": (cpu / n) if n and cpu is not None else None,
                      "verdicts": counts})
    return table


# device_memory_borrowed is a flag (1: admitted on a loan of the worker's preparation budget): its sum counts them
WHERE_PHASES = ("device_memory_wait", "device_memory_borrowed", "judge_wait", "judge_wait.inputs",
                "judge_wait.output", "judge_wait.audit", "judge_wait.heavy_set_wait", "candidate.correctness",
                "candidate.timing", "oracle.sets")


def where_it_goes(rows, step):
    """Per phase of WHERE_PHASES and every worker.<step> the rows have: (median, p90, sum) of its
    seconds over the run's verdicts, in that order (absent phases count 0 s in a row)."""
    ps = [r.get("phase_seconds") or {} for r in rows if r["step"] == step]
    names = list(WHERE_PHASES) + sorted({k for p in ps for k in p if k.startswith("worker.")})
    out = []
    for name in names:
        xs = sorted(p.get(name, 0.0) for p in ps)
        if xs and any(xs):
            out.append((name, statistics.median(xs), xs[int(0.9 * (len(xs) - 1))], sum(xs)))
    return out


def where_lines(rows, table):
    """The report's per-phase table of each GPU phase of run b (where its candidates' time went)."""
    out = []
    for t in table:
        phases = where_it_goes(rows, t["step"]) if (t["step"] or "").startswith("b-g") else []
        if phases:
            out += ["", "%s, seconds per candidate (`phase_seconds`):" % t["run"], "",
                    "| phase | median | p90 | sum |", "|---|---|---|---|"]
            out += ["| %s | %.2f | %.2f | %.0f |" % p for p in phases]
    return out


def speedup_agreement(rows):
    """kjudge's speedup (run a) over KernelBench's (run c) on the candidates both judged correct."""
    kb = {r["candidate"]: r["speedup"] for r in rows if r["step"] == "c" and r["verdict"] == "OK" and r.get("speedup")}
    ratios = sorted(r["speedup"] / kb[r["candidate"]] for r in rows
                    if r["step"] == "a" and r["verdict"] == "OK" and r.get("speedup") and r["candidate"] in kb)
    if not ratios:
        return []
    return ["", "Speedup, kjudge (a) / KernelBench (c), on the %d candidates both judged correct: median %.2f, "
            "range %.2f-%.2f." % (len(ratios), statistics.median(ratios), ratios[0], ratios[-1])]


def fmt(x, f="%.1f"):
    return "-" if x is None else f % x


def step_report(a):
    rows = load(os.path.join(a.out, "rows.jsonl"))
    windows = ended_windows(load(os.path.join(a.out, "windows.jsonl")), rows)
    smi = smi_rows(os.path.join(a.out, "smi.csv"))
    entries = entries_of(a)
    submitted, kb_n = len(entries), len(kb_subset(entries, a.kb_n))
    table = run_table(rows, windows, smi, submitted, kb_n)
    built = [r["phase_seconds"] for r in rows if r["step"] == "a" and r.get("phase_seconds", {}).get("build.cpu_seconds")]
    build_cpu = [p["build.cpu_seconds"] for p in built]
    light = sum(1 for p in built if p.get("build.light_headers"))
    minimal = sum(1 for p in built if p.get("build.minimal_headers"))
    out = ["# RL-step benchmark (bench/rlstep)", "", "- date: %s UTC" % time.strftime(
               "%Y-%m-%d %H:%M", time.gmtime(min((w["start"] for w in windows), default=time.time()))),  # the run's, not the report's
           "- candidates: %d distinct sources (manifest %s)" % (submitted, os.path.basename(a.manifest)),
           "- GPUs: runs a and c on GPU 0, b's GPU phases on GPUs 0..n-1 (n in the run's name)", "",
           "| run | makespan s | judged / submitted | candidates / h / GPU | GPU util mean % | GPU busy share | device memory max GiB | node CPU-s / candidate | verdicts |",
           "|---|---|---|---|---|---|---|---|---|"]
    for t in table:
        out.append("| %s | %s | %d / %d | %s | %s | %s | %s | %s | %s |" % (
            t["run"], fmt(t["makespan_s"]), t["judged"], t["candidates"], fmt(t["per_hour_per_gpu"], "%.0f"),
            fmt(t["gpu_util_mean"]), fmt(t["gpu_busy_share"], "%.2f"), fmt(t["device_memory_max_gib"]),
            fmt(t["cpu_s_per_candidate"]), t["verdicts"]))
    if build_cpu:
        out += ["", "Run a, kjudge's own build CPU-s per candidate under load (`phase_seconds[\"build.cpu_seconds\"]`, "
                "the build sandbox's tree): median %.1f, p90 %.1f over %d builds; %d of them with the light torch "
                "headers (`build.light_headers`), %d of those with the minimal .cu header (`build.minimal_headers`)." % (
                    statistics.median(build_cpu), sorted(build_cpu)[int(0.9 * (len(build_cpu) - 1))], len(build_cpu), light,
                    minimal)]
    by = {t["run"][0]: t for t in table}
    if "a" in by and "c" in by and by["c"]["stopped"]:
        out += ["", "Makespan a / c <= %.2f (target <= 0.33): c was stopped after %d of its %d candidates (the device "
                "session's time), so its %.0f s are a lower bound on its makespan." % (
                    by["a"]["makespan_s"] / by["c"]["makespan_s"], by["c"]["judged"], kb_n, by["c"]["makespan_s"])]
    elif "a" in by and "c" in by and by["c"]["makespan_s"]:
        c_span = by["c"]["makespan_s"] * submitted / kb_n  # both of its phases grow linearly with the batch
        how = "" if kb_n == submitted else (" (c ran %d of the %d candidates; its makespan scaled by %d/%d to %.0f s: "
                                           "an estimate, not a measurement)" % (kb_n, submitted, submitted, kb_n, c_span))
        out += ["", "Makespan a / c = %.2f (target <= 0.33)%s." % (by["a"]["makespan_s"] / c_span, how)]
    phases = [t for t in table if t["run"].startswith("b: builds supplied (GPU phase") and t["per_hour_per_gpu"]]
    one = [t for t in phases if t["gpus"] == 1]
    for t in phases:
        if one and t["gpus"] > 1:
            rate, rate1 = t["per_hour_per_gpu"] * t["gpus"], one[0]["per_hour_per_gpu"]
            out += ["", "b's GPU phase on %d GPUs: %.0f candidates/h against %.0f on one GPU: %.2fx (ideal %d)." % (
                t["gpus"], rate, rate1, rate / rate1, t["gpus"])]
    out += speedup_agreement(rows)
    out += where_lines(rows, table)
    md = "\n".join(out) + "\n"
    open(os.path.join(a.out, "table.md"), "w").write(md)
    json.dump({"runs": table}, open(os.path.join(a.out, "results.json"), "w"), indent=1)
    print(md)


STEPS = {"a": step_a, "b-build": step_b_build, "b-judge": step_b_judge, "c": step_c, "report": step_report}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=sorted(STEPS))
    ap.add_argument("--manifest", required=True, help="variants.py's manifest.json")
    ap.add_argument("--dataset", required=True, help="KernelBench's problems (level1/ ...)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--redis", default="unix:///tmp/kjrl/redis.sock")
    ap.add_argument("--kjudge", default=None, help="the kjudge CLI, used when kjudge's Python client does not import")
    ap.add_argument("--build-log", default="", help="b-build: the build node's log (its build.done events)")
    ap.add_argument("--kb-src", default="", help="c: KernelBench's src dir")
    ap.add_argument("--kb-processes", type=int, default=os.cpu_count() or 8)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--kb-n", type=int, default=0, help="c: evaluate only this many candidates, spread over the batch")
    ap.add_argument("--timeout-s", type=int, default=3600)
    ap.add_argument("--stall-s", type=int, default=180)
    ap.add_argument("--gpus", type=int, default=1, help="b-judge: the judging node's GPUs (0..gpus-1)")
    ap.add_argument("--label", default="", help="b-judge: names its rows b-<label> (default g<gpus>; the run adds -share<x>)")
    ap.add_argument("--resubmit", action="store_true", help="b-judge: submit the batch again (a later GPU phase)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    STEPS[a.step](a)


if __name__ == "__main__":
    main()
