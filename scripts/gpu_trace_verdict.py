"""The GPU suite's trace part (scripts/test_gpu): reads bench/gpu_worker/trace_probe.py's JSON lines
and fails unless the CUPTI kernel recorder does what the legality check relies on:
  - every workload's recorder row names the same kernels as torch.profiler (`agree`);
  - a replayed CUDA graph is flagged (kernels it cannot name are counted, never silently dropped);
  - the harness's traced call took its kernels from the recorder and its op tracer worked.
Usage: python3 scripts/gpu_trace_verdict.py trace.jsonl"""
import json
import sys


def problems(rows):
    by = {}
    for row in rows:
        by.setdefault(row["probe"], []).append(row)
    found = []
    for need in ("recorder", "graph_replay", "harness_traced_call"):
        if need not in by:
            found.append(f"no {need} row (the probe stopped early?)")
    for row in by.get("recorder", []):
        if not row.get("agree"):
            found.append(f"recorder disagrees with torch.profiler on {row.get('workload')}: "
                         f"{row.get('error') or row.get('kernels')} vs {row.get('profiler_kernels')}")
    for row in by.get("graph_replay", []):
        if not row.get("flagged"):
            found.append(f"a replayed CUDA graph was not flagged: {row}")
    for row in by.get("harness_traced_call", []):
        if row.get("kernel_source") != "recorder" or not row.get("tracer_ok"):
            found.append(f"harness traced call on {row.get('workload')}: source {row.get('kernel_source')}, "
                         f"tracer_ok {row.get('tracer_ok')}, {row.get('recorder_problem') or row.get('tracer_problem')}")
    return found


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    found = problems(rows)
    for p in found:
        print("FAIL:", p)
    print(f"trace: {len(rows)} rows, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
