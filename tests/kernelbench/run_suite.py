#!/usr/bin/python3
"""Runs the KernelBench-format problem set (manifest.json) through `kjudge eval` and prints a
tasks x verdicts table. Used by tests/python/kernelbench/test_kernelbench_suite.py (CPU, in scripts/test)
and by bench/kernelbench/gpu_run (CUDA, realistic sizes, strict and compat side by side).

Exit status: 0 when every verdict (and cheat class) is the expected one."""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def jobs_from_manifest(manifest, backend, only=None):
    out = []
    for task in manifest["tasks"]:
        for cand in task["candidates"]:
            if cand["backend"] != backend or (only and task["id"] not in only):
                continue
            out.append({"task": task, "file": cand["file"], "expect": cand["expect"],
                        "cheat_class": cand.get("cheat_class", ""), "kind": "candidate",
                        "also_accept": cand.get("also_accept", []), "evidence": cand.get("evidence", [])})
    for comp in manifest.get("completions", []):
        if comp["backend"] == backend and (not only or comp["task"] in only):
            task = next(t for t in manifest["tasks"] if t["id"] == comp["task"])
            out.append({"task": task, "file": comp["file"], "expect": comp["expect"], "cheat_class": "",
                        "kind": "completion"})
    return out


def job_config(base_config, state_dir):
    """kjudge eval clears its state dir's stale job dirs at start: one state dir per run, one
    shared cache (builds, precompiled headers)."""
    os.makedirs(state_dir, mode=0o755, exist_ok=True)
    path = os.path.join(state_dir, "kjudge.toml")
    with open(base_config) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(f'[daemon]\nstate_dir = "{state_dir}"\n\n' + text)  # the base config has no [daemon] table
    return path


def run_one(kjudge, config, job, backend, trials, sizes, compat, timeout, state_dir):
    config = job_config(config, state_dir)
    task = job["task"]
    ref = os.path.join(HERE, task["dir"], "reference.py")
    cmd = [kjudge, "eval", "-c", config, "--kb-reference", ref, "--backend", backend, "--json",
           "--trials", str(trials), "--job-id", f"{task['id']}.{os.path.basename(job['file'])[:-3]}"]
    if job["kind"] == "completion":
        cmd += ["--kb-completion", os.path.join(HERE, job["file"])]
    else:
        cmd += ["--kb-candidate", os.path.join(HERE, task["dir"], job["file"])]
    for name, value in (sizes or {}).items():
        cmd += ["--size", f"{name}={value}"]
    if compat:
        cmd += ["--compat"]
    t0 = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    wall = time.time() - t0
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result = {"status": "NO_RESULT", "message": (proc.stderr or proc.stdout)[-500:]}
    return result, wall


def subset(jobs):
    """Every cheat stays, once: a cheat file judged on several tasks (the same trick against
    another op) is judged on its first task only. Every completion stays; honest candidates are
    kept for one task per category, which still checks the legality lists against each kind of op
    without building every task."""
    seen, out = set(), []
    for j in jobs:
        key = j["task"]["id"].split("_")[0] if j["expect"] == "OK" and j["kind"] == "candidate" else j["file"]
        if j["kind"] == "completion" or key not in seen:
            out.append(j)
            seen.add(key)
    return out


def cheat_class_name(result):
    c = result.get("cheatClass", "")
    return c.replace("CHEAT_", "").lower() if c else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kjudge", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--gpu-sizes", action="store_true", help="apply each task's gpu_size_overrides")
    ap.add_argument("--compat-too", action="store_true", help="also run OK candidates in compat mode")
    ap.add_argument("--only", nargs="*", help="task ids")
    ap.add_argument("--out", help="write the table and the raw results (JSON lines) here")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--state-base", default="/tmp/kjudge-kb-suite", help="per-run state dirs go here")
    ap.add_argument("--progress", help="JSON lines, one per finished run, appended as runs end "
                    "(default: OUT.partial.jsonl)")
    ap.add_argument("--resume", action="store_true", help="skip runs already in --progress (a run cut short "
                    "by a time limit goes on where it stopped)")
    ap.add_argument("--subset", action="store_true", help="every cheat, every completion, and the honest "
                    "candidate of one task per category (elementwise, activation, ...): the CI run")
    args = ap.parse_args()
    progress = args.progress or (args.out + ".partial.jsonl" if args.out else None)
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)
    jobs = jobs_from_manifest(manifest, args.backend, set(args.only) if args.only else None)
    if args.subset:
        jobs = subset(jobs)
    runs = [(j, False) for j in jobs]
    if args.compat_too:
        runs += [(j, True) for j in jobs if j["expect"] == "OK" and j["kind"] == "candidate"]
    results = [None] * len(runs)
    if args.resume and progress and os.path.exists(progress):
        done = {}
        with open(progress) as f:
            for line in f:
                row = json.loads(line)
                done[(row["task"], row["file"], row["compat"])] = (row["result"], row["wall_s"])
        for i, (j, compat) in enumerate(runs):
            results[i] = done.get((j["task"]["id"], j["file"], compat))
        print(f"resuming: {sum(r is not None for r in results)}/{len(runs)} runs already done", flush=True)
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(run_one, args.kjudge, args.config, j, args.backend, args.trials,
                            j["task"].get("gpu_size_overrides") if args.gpu_sizes else None, compat,
                            args.timeout, os.path.join(args.state_base, f"run{i}")): i
                for i, (j, compat) in enumerate(runs) if results[i] is None}
        for fut in cf.as_completed(futs):
            i = futs[fut]
            try:
                results[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one failed run is a row, not a crash
                results[i] = ({"status": "NO_RESULT", "message": str(exc)}, 0.0)
            # progress as it happens (a run cut short by a time limit still shows what it judged)
            job, compat = runs[i]
            res, wall = results[i]
            print(f"[{sum(r is not None for r in results)}/{len(runs)}] {job['task']['id']} {job['file']} "
                  f"{'compat' if compat else 'strict'}: {res.get('status')} {res.get('cheatClass', '')} "
                  f"{wall:.1f}s {res.get('message', '')[:120]}", flush=True)
            if progress:
                with open(progress, "a") as f:
                    f.write(json.dumps({"task": job["task"]["id"], "file": job["file"], "compat": compat,
                                        "expect": job["expect"], "result": res, "wall_s": wall}) + "\n")
    lines, bad = [], 0
    lines.append(f"{'task':<24} {'candidate':<36} {'mode':<7} {'expected':<22} {'got':<22} {'speedup':>8} {'wall s':>7}")
    raw = []
    for (job, compat), (result, wall) in zip(runs, results):
        got = result.get("status", "NO_RESULT")
        cls = cheat_class_name(result)
        got_s = f"{got}({cls})" if cls else got
        want_s = f"{job['expect']}({job['cheat_class']})" if job["cheat_class"] else job["expect"]
        ok = got == job["expect"] and (not job["cheat_class"] or cls == job["cheat_class"])
        # the flags the cheat must raise: the check its class names fired, not another one
        missing = [f for f in job.get("evidence", []) if f not in result.get("legality", {}).get("flags", [])]
        ok = (ok and not missing) or got in job.get("also_accept", [])  # another rejection the manifest explains
        if compat:  # compat mode judges the same; its row is for the numbers
            ok = got == job["expect"]
        bad += 0 if ok else 1
        perf = result.get("performance", {})
        speed = f"{perf.get('speedup', 0):.2f}x" if perf.get("speedup") else "-"
        lines.append(f"{job['task']['id']:<24} {os.path.basename(job['file'])[:36]:<36} "
                     f"{'compat' if compat else 'strict':<7} {want_s:<22} {got_s:<22} {speed:>8} {wall:>7.1f}"
                     + ("" if ok else "   <-- MISMATCH: " + (f"no {missing} flag: " if missing else "")
                        + result.get("message", "")[:160]))
        raw.append({"task": job["task"]["id"], "file": job["file"], "compat": compat, "expect": job["expect"],
                    "result": result, "wall_s": wall})
    counts = {}
    for (job, compat), (result, _) in zip(runs, results):
        if not compat:
            counts[result.get("status", "NO_RESULT")] = counts.get(result.get("status", "NO_RESULT"), 0) + 1
    lines.append(f"kernelbench suite ({args.backend}): {len(runs) - bad}/{len(runs)} verdicts as expected; "
                 f"verdict counts {json.dumps(counts, sort_keys=True)}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        with open(args.out + ".jsonl", "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
