"""The table of bench/gpu_worker/run: kjudge's rows (verdict, stage and phase seconds, submit to
result) and KernelBench's evaluator's on the same pairs, GPU utilisation in each one's window."""
import datetime
import glob
import json
import os
import sys


def load(w):
    walls, marks = {}, {}
    for line in open(os.path.join(w, "results/walls.txt")):
        parts = line.split()
        if parts[0] == "mark":
            marks[parts[1]] = float(parts[2])
        else:
            walls[parts[0]] = float(parts[1])
    results = {}
    for f in glob.glob(os.path.join(w, "results/*.json")):
        try:
            results[os.path.basename(f)[:-5]] = json.load(open(f))
        except ValueError:
            results[os.path.basename(f)[:-5]] = {"status": "NO RESULT"}
    return walls, marks, results, jsonl(os.path.join(w, "peer.jsonl"))


def jsonl(path):
    return [json.loads(line) for line in open(path) if line.startswith("{")] if os.path.exists(path) else []


def utilisation(w, start, end):
    vals = []
    for line in open(os.path.join(w, "smi.csv")):
        parts = [p.strip() for p in line.split(",")]
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        except (ValueError, IndexError):
            continue
        if start <= t <= end:
            vals.append(float(parts[1]))
    return (sum(vals) / len(vals), len(vals)) if vals else (float("nan"), 0)


def stage_seconds(r):
    return {s["stage"].replace("STAGE_", "").lower(): round(s.get("seconds", 0), 2) for s in r.get("stages", [])}


def main(w):
    walls, marks, results, peer = load(w)
    print(f"# bench/gpu_worker/run, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC")
    print("## kjudge (strict, resident trusted worker): cold batch, every pair submitted together")
    print("(cheat_*: candidates that write to their inputs (expected CUDA_FAULT or CHEAT), raise their mapping to"
          " read-write and write (CHEAT), probe the channel for expected outputs (CHEAT))")
    print(f"{'job':<24} {'verdict':<14} {'speedup':>8} {'stages (s)':<70} gpu_lock_held")
    for name in sorted(k for k in results if k.startswith("cold-")):
        r = results[name]
        ph = r.get("phaseSeconds", {})
        print(f"{name:<24} {r.get('status', '?'):<14} {r.get('performance', {}).get('speedup', 0):>8.2f} "
              f"{json.dumps(stage_seconds(r)):<70} {ph.get('gpu_lock_held', 0):.3f}")
        if r.get("status") != "OK":
            print(f"    message: {r.get('message', '')[:200]}")
    print(f"cold batch makespan: {walls.get('cold_batch', 0):.1f} s")
    print("## kjudge warm, one job at a time: submit to result")
    for name in sorted(k for k in results if k.startswith("warm")):
        r = results[name]
        ph = r.get("phaseSeconds", {})
        print(f"{name:<24} {r.get('status', '?'):<10} wall {walls.get(name, 0):6.2f} s  gpu_lock_held "
              f"{ph.get('gpu_lock_held', 0):.3f} s  stages {json.dumps(stage_seconds(r))}")
    print("## KernelBench eval_kernel_against_ref, same pairs, one process, sequential")
    for row in peer:
        print(json.dumps(row)[:300])
    print(f"peer total: {walls.get('peer_total', 0):.1f} s")
    if "makespan_start" in marks:
        mk = marks["makespan_end"] - marks["makespan_start"]
        u, n = utilisation(w, marks["makespan_start"], marks["makespan_end"])
        print(f"## 32 distinct candidates of one problem, builds cached: kjudge makespan {mk:.1f} s, "
              f"GPU utilisation {u:.1f}% ({n} samples)")
        if "peer_makespan_start" in marks:
            pk = marks["peer_makespan_end"] - marks["peer_makespan_start"]
            u2, n2 = utilisation(w, marks["peer_makespan_start"], marks["peer_makespan_end"])
            print(f"   KernelBench one after another: {pk:.1f} s, GPU utilisation {u2:.1f}% ({n2} samples); "
                  f"ratio kjudge/KernelBench {mk / pk:.2f}")
            rows = jsonl(os.path.join(w, "peer_mk.jsonl"))
            correct = sum(1 for r in rows if r.get("correctness"))
            print(f"   KernelBench: {correct} of {len([r for r in rows if 'seconds' in r and r.get('peer') != 'import'])} correct")
        verdicts = {}
        for k, r in results.items():
            if k.startswith("mk-") and not k.startswith("mk-build"):
                verdicts[r.get("status")] = verdicts.get(r.get("status"), 0) + 1
        print(f"   kjudge verdicts: {verdicts}")
    if "kjudge_start" in marks:
        u, n = utilisation(w, marks["kjudge_start"], marks.get("kjudge_end", 1e18))
        print(f"GPU utilisation, kjudge window: {u:.1f}% mean over {n} samples")
    if "peer_start" in marks:
        u, n = utilisation(w, marks["peer_start"], marks.get("peer_end", 1e18))
        print(f"GPU utilisation, KernelBench window: {u:.1f}% mean over {n} samples")


if __name__ == "__main__":
    main(sys.argv[1])
