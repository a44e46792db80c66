#!/usr/bin/env python3
"""kjudge-gateway against hostile clients (issue 55), with the release build of bench/gateway/run:

1. an authenticated tenant's submissions alone, then beside 1,000 misbehaving unauthenticated
   connections (a third each: slow heads, slow bodies, pipelined requests never read), the attack in
   a process of its own: refused count and added latency (p50, p99);
2. the gateway's resident memory (VmRSS now, VmHWM peak) under maximum-size requests
   (max_request_bytes, default 16 MiB): a valid batch, a JSON body of the most values allowed, a
   protobuf body of millions of empty jobs, a deep nest; then ten of each at once;
3. 1,000,000 cancels of unknown ids from one tenant (pipelined on 4 connections): replies by
   status and Redis used_memory before and after.

A private redis-server on a unix socket; tokens written straight into kj:{p0}:tokens; no kjudged
(the submission path). Usage: bench/gateway/hostile_bench.py BUILD_DIR [--cancels N] [--jobs N]
"""

import argparse
import hashlib
import http.client
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from hostile_clients import Strangers, percentile, submit_beside  # noqa: E402

CONFIG = """
[daemon]
log_level = "warn"
[gateway]
token_refresh_ms = 200
[gateway.tenants.bench]
max_queued = 100000000
rate_per_s = 1000000
burst = 1000000
max_batch_jobs = 100000
[gateway.tenants.mallory]
request_rate_per_s = 1000000
request_burst = 1000000
max_queued = 100000000
rate_per_s = 1000000
burst = 1000000
max_batch_jobs = 100000
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def token_for(r, tenant):
    token = "kjt_" + os.urandom(32).hex()
    r.hset("kj:{p0}:tokens", hashlib.sha256(token.encode()).hexdigest(), tenant)
    return token


def memory(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            fields[k] = int(v.split()[0]) / 1024
    return fields


def attack(port, seconds):
    """1,000 strangers, a third of each kind, for `seconds` (run in a process of its own)."""
    kinds = [("slow_head", 334), ("slow_body", 333), ("unread", 333)]
    attacks = [Strangers(port, k, n) for k, n in kinds]
    for a in attacks:
        a.__enter__()
    time.sleep(seconds)
    for a in attacks:
        a.__exit__()
    print("# attack: " + ", ".join(f"{a.kind} {a.n} held, {a.reopened} closed by the gateway and reopened"
                                   for a in attacks), flush=True)


def post(port, path, body, token, media):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", path, body=body, headers={"Authorization": "Bearer " + token, "Content-Type": media})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def big_bodies(limit):
    """Requests of (nearly) max_request_bytes, each of a different worst kind."""
    job = '{"trivial": {"argv": ["/bin/true"]}, "client_meta": {"pad": "%s"}}'
    per_job = 16_000
    n = limit // (per_job + 200)  # under max_request_bytes with room for the envelope
    batch = '{"batch_id": "big", "jobs": [' + ",".join(
        (job % ("x" * per_job)).replace("{", '{"job_id": "big-%d", ' % i, 1) for i in range(n)) + "]}"
    values = '{"trivial": {"argv": [' + ",".join(['"%s"' % ("y" * 50)] * 249_990) + "]}}"
    empties = b"\x1a\x00" * (limit // 2 - 8)
    deep = '{"client_meta": ' + "[" * (limit // 2 - 20) + "]" * (limit // 2 - 20) + "}"
    # the bombs first: VmHWM is the peak so far, so each line shows what its kind added
    return [("JSON, 8M-deep nest", "/v1/jobs", deep.encode(), "application/json"),
            ("protobuf, 8M empty jobs", "/v1/batches", empties, "application/x-protobuf"),
            ("JSON, 250k values (argv)", "/v1/jobs", values.encode(), "application/json"),
            ("valid batch of %d jobs" % n, "/v1/batches", batch.encode(), "application/json")]


def memory_phase(port, pid, token, limit):
    print(f"# gateway memory at rest: {memory(pid)}")
    for name, path, body, media in big_bodies(limit):
        status, data = post(port, path, body, token, media)
        print(f"one {name}, {len(body)} bytes: HTTP {status} {data[:90]!r}; gateway {memory(pid)}")
        results = [None] * 10
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(
            i, post(port, path.replace("big", f"big{i}"), body.replace(b'"big', f'"b{i}'.encode()), token, media)[0]))
            for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"ten at once: HTTP {sorted(results)}; gateway {memory(pid)}")


def complete_replies(data, statuses):
    """Counts the whole replies at the start of data by status; returns (count, bytes used)."""
    pos = count = 0
    while True:
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            return count, pos
        head = data[pos:end]
        length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))
        if end + 4 + length > len(data):
            return count, pos
        status = head[9:12].decode()
        statuses[status] = statuses.get(status, 0) + 1
        count += 1
        pos = end + 4 + length


def cancel_worker(port, token, first, count, out):
    """DELETEs of ids never submitted, pipelined 500 at a time on one keep-alive connection."""
    s = socket.create_connection(("127.0.0.1", port))
    auth = f"Authorization: Bearer {token}\r\n"
    batch = 500
    for start in range(first, first + count, batch):
        n = min(batch, first + count - start)
        s.sendall("".join(f"DELETE /v1/jobs/ghost-{i} HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
                          for i in range(start, start + n)).encode())
        seen, data = 0, b""
        while seen < n:
            data += s.recv(1 << 20)
            got, used = complete_replies(data, out)
            data = data[used:]
            seen += got
    s.close()


def cancel_phase(port, r, token, total):
    r.execute_command("MEMORY", "PURGE")
    before, keys_before = r.info("memory")["used_memory"], r.dbsize()
    start = time.perf_counter()
    parts, outs = 4, [{} for _ in range(4)]
    threads = [threading.Thread(target=cancel_worker, args=(port, token, i * (total // parts), total // parts, outs[i]))
               for i in range(parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    statuses = {}
    for o in outs:
        for k, v in o.items():
            statuses[k] = statuses.get(k, 0) + v
    r.execute_command("MEMORY", "PURGE")
    after = r.info("memory")["used_memory"]
    print(f"{total} cancels of unknown ids in {seconds:.1f} s ({total / seconds:.0f}/s): replies {statuses}; "
          f"Redis keys {keys_before} -> {r.dbsize()}, used_memory {before} -> {after} bytes "
          f"(grew {after - before} bytes)")


def latency_phase(port, token, jobs, label):
    statuses, latencies = submit_beside(port, token, jobs, label, pause_s=0.002)
    refused = len([s for s in statuses if s != 202])
    ms = [x * 1000 for x in latencies]
    kinds = {}
    for s in statuses:
        kinds[s] = kinds.get(s, 0) + 1
    print(f"{label}: {jobs} submissions ({kinds}), {refused} refused, p50 {percentile(ms, 50):.2f} ms, "
          f"p99 {percentile(ms, 99):.2f} ms, max {max(ms):.2f} ms")
    return percentile(ms, 50), percentile(ms, 99), refused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", type=Path)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--cancels", type=int, default=1_000_000)
    ap.add_argument("--max-request-bytes", type=int, default=16 << 20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kjgw-hostile."))
    sock = work / "redis.sock"
    rs = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
                           "--dir", str(work), "--save", "", "--appendonly", "no", "--logfile", str(work / "redis.log")])
    gw = None
    try:
        r = redis.Redis(unix_socket_path=str(sock))
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        r.function_load((ROOT / "queue/lua/kjudge.lua").read_text(), replace=True)
        tenant, mallory = token_for(r, "bench"), token_for(r, "mallory")
        (work / "gateway.toml").write_text(CONFIG)
        port = free_port()
        gw = subprocess.Popen([str(args.build / "bin/kjudge-gateway"), "-c", str(work / "gateway.toml"), "--redis",
                               f"unix://{sock}", "--port", str(port)])
        while subprocess.run(["python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), 0.2)"],
                             capture_output=True).returncode:
            time.sleep(0.05)
        print(f"# {' '.join(sys.argv)}")
        print(f"# date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}  host: {os.uname().nodename}  "
              f"cpus: {os.cpu_count()}  load average before: {open('/proc/loadavg').read().split()[:3]}")
        latency_phase(port, tenant, 300, "warm-up")
        base = latency_phase(port, tenant, args.jobs, "alone")
        attacker = multiprocessing.Process(target=attack, args=(port, 1e9))
        attacker.start()
        time.sleep(3.0)  # 1,000 connections in place, past the first head deadline
        hit = latency_phase(port, tenant, args.jobs, "beside-1000-strangers")
        attacker.terminate()
        attacker.join()
        print(f"added latency: p50 {hit[0] - base[0]:.2f} ms, p99 {hit[1] - base[1]:.2f} ms; refused {hit[2]}")
        memory_phase(port, gw.pid, mallory, args.max_request_bytes)
        cancel_phase(port, r, mallory, args.cancels)
        print(f"# load average after: {open('/proc/loadavg').read().split()[:3]}")
    finally:
        if gw:
            gw.terminate()
            gw.wait()
        rs.terminate()
        rs.wait()


if __name__ == "__main__":
    main()
