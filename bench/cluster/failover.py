#!/usr/bin/python3
"""Primary failovers under steady load on a cluster in a box (deploy/cluster): the long version of
tests/cluster/test_cluster.py, for bench/results.

    bench/cluster/failover.py [--failovers 20] [--rate 20] [--nodes 3] [--every 6] [--json out.json]

Direct clients and gateway clients each submit `rate` trivial jobs per second (so 2 x rate in
all, from `clients` threads of each kind); every `every` seconds the primary is SIGKILLed (the sentinels promote a replica, the old
primary comes back as a replica). Then: acknowledged jobs lost, results changed after a client
read them, jobs with more than one result, the service gap of each failover (last completion
seen before the kill to the first after), the acknowledgement latency, and the cost of the
replica acknowledgement (WAIT) on one submit, measured on the same cluster.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "cluster"))
sys.path.insert(0, str(ROOT / "python"))

import load  # noqa: E402
from cluster import Cluster  # noqa: E402
from kjudge.client import Client  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def submit_cost(c, n=400):
    """ms per sequential submit with and without the replica acknowledgement, same primary."""
    out = {}
    for acks in (0, 1):
        client = Client(c.url, replica_acks=acks)
        lat = []
        for i in range(n):
            t = time.perf_counter()
            client.submit(load.trivial(f"cost{acks}-{i}", "cost"))
            lat.append((time.perf_counter() - t) * 1000)
        out[f"acks={acks}"] = {"p50_ms": round(pct(lat, 50), 3), "p99_ms": round(pct(lat, 99), 3)}
    return out


def stage_cost(c, n=400):
    """ms per result of what replica acknowledgements add to filing one (Queue::complete): SET NX
    GET of the staged copy, WAIT 1, DEL after kj_complete, on one connection to the primary."""
    import redis

    rc = c.primary_client(redis)
    lat = []
    for i in range(n):
        t = time.perf_counter()
        rc.set(f"kj:{{p0}}:staged:cost:{i}", b"x" * 300, nx=True, get=True, ex=60)
        rc.execute_command("WAIT", 1, 2000)
        rc.delete(f"kj:{{p0}}:staged:cost:{i}")
        lat.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(pct(lat, 50), 3), "p99_ms": round(pct(lat, 99), 3)}


def cost_only():
    c = Cluster(tempfile.mkdtemp(prefix="kjbench-cluster.", dir="/tmp"), nodes=1).up()
    try:
        out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv),
               "submit_cost_sequential": submit_cost(c), "result_staging_added": stage_cost(c)}
    finally:
        c.down()
    print(json.dumps(out, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--failovers", type=int, default=20)
    ap.add_argument("--rate", type=float, default=20, help="jobs/s per submitter (direct and gateway)")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--every", type=float, default=6, help="seconds between failovers")
    ap.add_argument("--clients", type=int, default=1, help="submitter threads of each kind (rate split among them)")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--cost-only", action="store_true", help="only the submit and result-staging costs")
    a = ap.parse_args()
    if a.cost_only:
        return cost_only()
    os.environ.setdefault("KJUDGE_BIN", str(ROOT / "build-test/bin") if not (ROOT / "build/bin/kjudged").exists()
                          else str(ROOT / "build/bin"))
    c = Cluster(tempfile.mkdtemp(prefix="kjbench-cluster.", dir="/tmp"), nodes=a.nodes).up()
    try:
        cost = submit_cost(c)
        ledger = load.Ledger()
        gws = [c.gateway_url(i) for i in range(len(c.gateway_ports))]
        per = a.rate / a.clients
        threads = [load.Reader(ledger, c.url, ["direct", "demo"])]
        for k in range(a.clients):
            threads += [load.Submitter(ledger, "direct", per, f"d{k}", load.direct_submit(c.url)),
                        load.Submitter(ledger, "demo", per, f"g{k}", load.gateway_submit(gws, c.tokens["demo"]))]
        t_start = time.monotonic()
        for t in threads:
            t.start()
        kills, named = [], []
        for i in range(a.failovers):
            time.sleep(a.every)
            killed_at, n, back = c.kill_primary()
            kills.append(killed_at)
            named.append(n)
            print(f"failover {i + 1}: new primary after {n:.1f} s, replicas back in {back:.1f} s", flush=True)
        time.sleep(a.every)
        for t in threads:
            t.stop_flag.set()
        for t in threads:
            t.join(timeout=120)
        t_load = time.monotonic() - t_start
        report = load.check(ledger, c.url, ["direct", "demo"])
        import redis
        gaps = load.gaps(load.stored_at(c.primary_client(redis), ["direct", "demo"]), kills)
    finally:
        c.down()
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.platform()}",
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "command": " ".join(sys.argv),
        "failovers": len(kills), "load_seconds": round(t_load, 1),
        "acked": report["acked"], "acked_per_s": round(report["acked"] / t_load, 1),
        "lost": len(report["lost"]), "changed_after_read": len(report["changed_after_read"]),
        "duplicates": len(report["duplicates"]), "failed_submissions": ledger.failed,
        "submissions_retried": ledger.retried, "verdicts": report["verdicts"],
        "new_primary_named_s": {"p50": round(pct(named, 50), 2), "max": round(max(named), 2)},
        "service_gap_s": {"p50": round(pct(gaps, 50), 2), "p99": round(pct(gaps, 99), 2), "max": round(max(gaps), 2),
                          "n": len(gaps)},
        "ack_latency_ms": {"p50": round(1000 * pct(ledger.ack_latency, 50), 1),
                           "p99": round(1000 * pct(ledger.ack_latency, 99), 1),
                           "mean": round(1000 * statistics.mean(ledger.ack_latency), 1)},
        "submit_cost_sequential": cost,
    }
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    bad = out["lost"] or out["changed_after_read"] or out["duplicates"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
