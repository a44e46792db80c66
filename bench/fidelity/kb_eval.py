"""KernelBench's own evaluator (`eval_kernel_against_ref` of src/kernelbench/eval.py in
github.com/ScalingIntelligence/KernelBench; a copy is passed in with --kb-src, never committed) on
one reference/candidate pair, as its users run it (eval_from_generations: 5 correctness trials,
100 timed trials, cuda events). Prints one JSON line. The reference is timed in the same call
(check_for_excessive_speedup, KernelBench's own path), so KernelBench's speedup is
ref_runtime / runtime.

Usage: kb_eval.py --kb-src DIR --reference REF.py --candidate CAND.py --build-dir DIR [--correct-trials 5] [--perf-trials 100]
       kb_eval.py --kb-src DIR --build --pairs PAIRS.json --processes N
         (only the builds, in parallel, into each pair's build dir: KernelBench's build_compile_cache,
          as eval_from_generations does before it evaluates; PAIRS: [{"name", "candidate", "build_dir"}])

KernelBench's package imports LLM clients (openai, litellm) at import time that the evaluator does
not use and the GPU node lacks: empty stand-ins are registered first (as bench/gpu_worker/peer_eval.py)."""
import argparse
import json
import sys
import time
import types

for _name in ("openai", "litellm"):
    _stub = types.ModuleType(_name)
    _stub.OpenAI = object
    _stub.completion = None
    sys.modules.setdefault(_name, _stub)


def build_one(args):
    src, pair = args
    sys.path.insert(0, src)
    from kernelbench.eval import build_compile_cache
    t = time.perf_counter()
    try:
        ok, _, err = build_compile_cache(open(pair["candidate"]).read(), build_dir=pair["build_dir"])
    except Exception as exc:  # noqa: BLE001
        ok, err = False, "%s: %s" % (type(exc).__name__, exc)
    return {"kb_build": pair["name"], "ok": ok, "seconds": round(time.perf_counter() - t, 2), "error": (err or "")[:300]}


def build_all(src, pairs_path, processes):
    import multiprocessing
    pairs = json.load(open(pairs_path))
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        for row in pool.imap_unordered(build_one, [(src, p) for p in pairs]):
            print(json.dumps(row), flush=True)


def evaluate(a):
    t0 = time.perf_counter()
    sys.path.insert(0, a.kb_src)
    import torch
    from kernelbench.eval import eval_kernel_against_ref
    ref, cand = open(a.reference).read(), open(a.candidate).read()
    row = {"import_s": round(time.perf_counter() - t0, 2)}
    t = time.perf_counter()
    try:
        r = eval_kernel_against_ref(ref, cand, seed_num=42, num_correct_trials=a.correct_trials,
                                    num_perf_trials=a.perf_trials, measure_performance=True,
                                    device=torch.device("cuda:0"), build_dir=a.build_dir,
                                    check_for_excessive_speedup=True)
        if r is None:
            row["error"] = "evaluator returned None (lock file error during compilation: retry)"
        else:
            row.update({"compiled": bool(r.compiled), "correctness": bool(r.correctness), "runtime": r.runtime,
                        "ref_runtime": getattr(r, "ref_runtime", -1.0),
                        "runtime_stats": getattr(r, "runtime_stats", {}), "ref_runtime_stats": getattr(r, "ref_runtime_stats", {}),
                        "metadata": {k: str(v)[:300] for k, v in r.metadata.items()}})
            if r.runtime and r.runtime > 0 and row["ref_runtime"] and row["ref_runtime"] > 0:
                row["speedup"] = row["ref_runtime"] / r.runtime
    except Exception as exc:  # noqa: BLE001 - the evaluator's own failure is a row too
        row["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
    row["seconds"] = round(time.perf_counter() - t, 2)
    print(json.dumps(row, default=str), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb-src", required=True, help="KernelBench's src dir (holds the kernelbench package)")
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--pairs")
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--reference")
    ap.add_argument("--candidate")
    ap.add_argument("--build-dir")
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    a = ap.parse_args()
    if a.build:
        build_all(a.kb_src, a.pairs, a.processes)
    else:
        evaluate(a)


if __name__ == "__main__":
    main()
