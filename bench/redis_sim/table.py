#!/usr/bin/env python3
"""The table of bench/redis_sim/run's steps (JSON lines of sim.py --json)."""
import json
import sys

OPS = ("submit(group)", "node.kj_fetch", "slot.kj_complete", "slot.exists_cancel", "slot.art_get", "build.art_set",
       "build.xrange", "e2e")


def lat(r, op):
    v = r["latency_ms"].get(op)
    return "%.2g / %.3g" % (v["p50"], v["p99"]) if v else "–"


rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
print("| artifact | target jobs/s | GPUs (nodes) | build nodes | done jobs/s | client cmds/s | Redis cmds/s (incl. in functions) "
      "| Redis CPU (cores) | Redis CPU µs/job | sim CPU (cores) | in / out MB/s | used_memory end / peak MB | growth MB/s | "
      + " | ".join("%s p50/p99 ms" % o for o in OPS) + " |")
print("|" + "---|" * (14 + len(OPS)))
for r in rows:
    art = "%.1f MiB x %.0f%%" % (r["artifact_bytes"] / 2**20, 100 * r["artifact_share"]) if r["artifact_share"] else "none"
    print("| %s | %g | %d (%d) | %d | %.0f | %d | %d | %.2f | %.0f | %.2f | %.1f / %.1f | %.0f / %.0f | %.2f | %s |" % (
        art, r["rate_target"], r["gpus"], r["nodes"], r["build_nodes"], r["jobs_completed_per_s"], r["client_cmds_per_s"],
        r["redis_cmds_per_s"], r["redis_cpu_cores"], r["redis_cpu_us_per_job"], r["sim_cpu_cores"], r["net_in_MBps"],
        r["net_out_MBps"], r["used_memory_MB_end"], r["used_memory_peak_MB"], r["used_memory_growth_MBps"],
        " | ".join(lat(r, o) for o in OPS)))
