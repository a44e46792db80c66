"""KernelBench's own evaluator (eval_kernel_against_ref from its public repository, fetched for the
run and never committed) on the same reference/candidate pairs as kjudge, one after another in one
process, as its users run it. Prints one JSON line per pair.

Usage: peer_eval.py <kernelbench src dir> <pairs.json>   (pairs: [{"name", "reference", "candidate"}])
       peer_eval.py --build <kernelbench src dir> <pairs.json> <processes>: only the candidates'
       builds, in parallel (KernelBench's build_compile_cache, as its eval_from_generations does
       before it evaluates), into the build dirs the evaluation then loads from
KernelBench's package imports its LLM clients (openai, litellm) at import time; they are not used
by the evaluator and not installed on the GPU node, so empty stand-ins are registered first."""
import json
import sys
import time
import types

for name in ("openai", "litellm"):
    stub = types.ModuleType(name)
    stub.OpenAI = object
    stub.completion = None
    sys.modules.setdefault(name, stub)


def build_dir(pair):
    return f"/tmp/kb_peer_build/{pair['name']}"


def build_one(args):
    src, pair = args
    sys.path.insert(0, src)
    from kernelbench.eval import build_compile_cache
    t = time.perf_counter()
    ok, _, err = build_compile_cache(open(pair["candidate"]).read(), build_dir=build_dir(pair))
    return {"peer_build": pair["name"], "ok": ok, "seconds": round(time.perf_counter() - t, 2), "error": (err or "")[:200]}


def build_all(src, pairs_path, processes):
    import multiprocessing
    pairs = json.load(open(pairs_path))
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        for row in pool.imap_unordered(build_one, [(src, p) for p in pairs]):
            print(json.dumps(row), flush=True)


def main(src, pairs_path):
    t0 = time.perf_counter()
    sys.path.insert(0, src)
    import torch
    from kernelbench.eval import eval_kernel_against_ref
    print(json.dumps({"peer": "import", "seconds": round(time.perf_counter() - t0, 2)}), flush=True)
    for pair in json.load(open(pairs_path)):
        ref, cand = open(pair["reference"]).read(), open(pair["candidate"]).read()
        t = time.perf_counter()
        try:
            r = eval_kernel_against_ref(ref, cand, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                                        measure_performance=True, device=torch.device("cuda:0"),
                                        build_dir=build_dir(pair))
            row = {"compiled": r.compiled, "correctness": r.correctness, "runtime_us": r.runtime,
                   "ref_runtime_us": getattr(r, "ref_runtime", -1), "metadata": {k: str(v)[:300] for k, v in r.metadata.items()}}
        except Exception as exc:  # noqa: BLE001 - the evaluator's own failure is a row too
            row = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        torch.cuda.empty_cache()
        print(json.dumps({"peer": pair["name"], "seconds": round(time.perf_counter() - t, 2), **row}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--build":
        build_all(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1], sys.argv[2])
