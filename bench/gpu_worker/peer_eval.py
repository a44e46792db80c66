"""KernelBench's own evaluator (eval_kernel_against_ref from its public repository, fetched for the
run and never committed) on the same reference/candidate pairs as kjudge, one after another in one
process, as its users run it. Prints one JSON line per pair.

Usage: peer_eval.py <kernelbench src dir> <pairs.json>   (pairs: [{"name", "reference", "candidate"}])
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
                                        build_dir=f"/tmp/kb_peer_build/{pair['name']}")
            row = {"compiled": r.compiled, "correctness": r.correctness, "runtime_us": r.runtime,
                   "ref_runtime_us": getattr(r, "ref_runtime", -1), "metadata": {k: str(v)[:300] for k, v in r.metadata.items()}}
        except Exception as exc:  # noqa: BLE001 - the evaluator's own failure is a row too
            row = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        torch.cuda.empty_cache()
        print(json.dumps({"peer": pair["name"], "seconds": round(time.perf_counter() - t, 2), **row}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
