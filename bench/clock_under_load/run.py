#!/usr/bin/env python3
"""The daemon's clock on a loaded host: native jobs judged with `kjudge eval` while busy-loop
processes compete for every core, by two builds of kjudge in turns (e.g. before and after a change
to the clock), so both see the same load. Per build: how often the loop span exceeded its bound
(SUSPICIOUS), and the span's excess over the in-process sum.

  bench/clock_under_load/run.py --build old=/path/old/build/bin --build new=build/bin --runs 15 --hogs 4
  bench/clock_under_load/run.py ... --bursty            (each busy loop on for 0.1-0.4 s, off for 0-0.4 s,
                                                         as a test run's processes come and go: the baseline
                                                         cached under one load, the candidate timed under another)
  bench/clock_under_load/run.py ... --example-file exploits/saxpy/task.json:honest.cpp
  bench/clock_under_load/run.py ... --kb activation_relu   (a KernelBench-format task of tests/kernelbench,
                                                             cpu backend: short timed loops, 20 ms slack)
"""
import shutil
import tempfile
import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def hog():
    while True:
        pass


def bursty_hog(seed):
    import random
    import time
    rng = random.Random(seed)
    while True:
        until = time.monotonic() + rng.uniform(0.1, 0.4)
        while time.monotonic() < until:
            pass
        time.sleep(rng.uniform(0.0, 0.4))


def judge(bindir, args):
    p = subprocess.run([str(Path(bindir) / "kjudge"), "eval", *args, "--json"], capture_output=True, text=True,
                       timeout=600)
    r = json.loads(p.stdout)
    perf = r.get("performance", {})
    return {"status": r.get("status"), "span": perf.get("outsideWallMs", 0.0), "bound": perf.get("outsideBoundMs", 0.0),
            "inproc": perf.get("inprocessSumMs", 0.0), "wait": perf.get("loopCpuWaitMs", 0.0),
            "message": r.get("message", "")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="NAME=BIN_DIR (repeat)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--hogs", type=int, default=4)
    ap.add_argument("--example", default="cpp/vector_add", help="a native example folder with ok.cpp")
    ap.add_argument("--example-file", help="TASK_JSON:CANDIDATE under examples/native instead of --example's ok.cpp")
    ap.add_argument("--kb", help="a tests/kernelbench task judged instead (cpu_ok.py, cpu backend)")
    ap.add_argument("--bursty", action="store_true", help="busy loops that come and go instead of steady ones")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    work = Path(tempfile.mkdtemp(prefix="kjclock."))
    work.chmod(0o711)  # bound into sandboxes as an unprivileged uid
    if args.kb:
        tdir = ROOT / "tests/kernelbench/tasks" / args.kb
        job = ["--kb-reference", str(tdir / "reference.py"), "--kb-candidate", str(tdir / "cpu_ok.py"), "--backend", "cpu"]
        label = f"kernelbench {args.kb} (cpu)"
    elif args.example_file:
        task, cand = args.example_file.split(":", 1)
        task = ROOT / "examples/native" / task
        job = ["--task", str(task), "--candidate", str(task.parent / cand)]
        label = args.example_file
    else:
        edir = ROOT / "examples/native" / args.example
        job = ["--task", str(edir / "task.json"), "--candidate", str(edir / "ok.cpp")]
        label = args.example
    configs = {}
    for name in builds:  # each build its own state and caches
        (work / name / "state").mkdir(parents=True, mode=0o711)
        (work / name / "cache").mkdir(mode=0o755)
        configs[name] = work / name / "kjudge.toml"
        configs[name].write_text(f'[daemon]\nstate_dir = "{work / name / "state"}"\n\n'
                                 f'[kernelbench]\ncache_dir = "{work / name / "cache"}"\n')
    hogs = [multiprocessing.Process(target=bursty_hog, args=(i,), daemon=True) if args.bursty
            else multiprocessing.Process(target=hog, daemon=True) for i in range(args.hogs)]
    for h in hogs:
        h.start()
    rows = {name: [] for name in builds}
    try:
        for i in range(args.runs):
            for name, bindir in builds.items():  # in turns: the same load for every build
                r = judge(bindir, ["-c", str(configs[name]), *job])
                rows[name].append(r)
                print(f"{i:3d} {name:6s} {r['status']:12s} span {r['span']:8.2f} ms  bound {r['bound']:8.2f} ms  "
                      f"in-process {r['inproc']:7.2f} ms  cpu wait {r['wait']:7.2f} ms", flush=True)
    finally:
        for h in hogs:
            h.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{label}, {args.runs} runs per build, {args.hogs} {'bursty ' if args.bursty else ''}busy-loop processes on "
          f"{multiprocessing.cpu_count()} cores")
    for name, rs in rows.items():
        suspicious = sum(r["status"] == "SUSPICIOUS" for r in rs)
        excess = [r["span"] - r["inproc"] for r in rs if r["span"]]
        ratio = [r["span"] / r["bound"] for r in rs if r["bound"]]
        print(f"{name:6s} SUSPICIOUS {suspicious}/{len(rs)}; span - in-process: median {statistics.median(excess):.2f} ms, "
              f"max {max(excess):.2f} ms; span/bound: median {statistics.median(ratio):.3f}, max {max(ratio):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
