#!/usr/bin/env python3
"""Redis load of a kjudge fleet, simulated (docs/capacity-plan.md).

One private redis-server (unix socket, no persistence, no maxmemory), the real function library
queue/lua/kjudge.lua loaded with FUNCTION LOAD REPLACE (as libkjqueue's Queue::load_functions and
the Python client do), then simulated processes sending the same Redis commands, with the same
keys, arguments, periods and pipelining as the C++ and Python code:

  clients      trainers as kjudge.judge_many: submit_many (kj_submit pipelined, one round trip per
               group), then wait_many (XREVRANGE + MGET, XREAD BLOCK on the tenant's done stream,
               MGET of the finished), open loop: a group every group/rate seconds per process
  judging      kjudged (src/daemon/): heartbeat (SET node, EXISTS drain, EXISTS gpuclear
  nodes        every 2 s), lease renewal (kj_lease per held stream every lease/3), cancel poll
               (EXISTS per running job every 500 ms), the fetch thread (HGETALL caps 1/s; tenant
               set SMEMBERS + XGROUP CREATE per lane every 500 ms; reaper XAUTOCLAIM per lane 1/s;
               promote ZCARD per tenant every 250 ms; kj_trim per lane every 10 s; kj_fetch
               pipelined per picked tenant, XREADGROUP BLOCK when nothing was there), per job on
               its slot's own connection: EXISTS cancel, the shared build claim for KernelBench
               jobs (STRLEN + GET of the artifact; while missing ZCOUNT builders and a 200 ms
               poll, local_max = 0), the GPU time (a sleep), kj_complete (6 keys)
  build nodes  kjudged --role build (src/buildfarm/): heartbeat (SET node, ZADD +
               ZREMRANGEBYSCORE builders, SCAN + GET/PTTL of every node key, EXISTS drain every
               2 s), the scan (per tenant and lane XPENDING, XINFO GROUPS, XRANGE COUNT scan_max;
               EXISTS result, EXISTS cancel, EXISTS artifact+lease per entry as build_scan.cpp),
               the claim (STRLEN, kj_build_lease acquire), the build (a sleep), publish (SET art
               PX ttl of an artifact-sized value), kj_build_lease release

--plan (docs/capacity-plan.md steps 1-3, as built): artifacts are files of a content-addressed store
(a directory: temp file, rename; read back and SHA-256 checked) and art:<key> a ~80-byte marker
(judging slot: GET marker, then the file; build node: file, then SET marker); job markers and
results with the 1 h TTLs; build nodes read build requests (kj_submit writes them once
kj:{p0}:config build_requests = 1) with XREADGROUP on their group, XRANGE of the job entry,
EXISTS result/cancel, EXISTS art+lease, then the claim, and XACK; their heartbeat reads
kj:{p0}:archs (HGETALL) instead of SCAN + GET of every heartbeat; judging nodes HSET their
architecture there, make groups for new tenants only, and leave promote, trim and the reaper's scan
to one elected node (kj_housekeeper hold, XPENDING IDLE per lane, kj:{p0}:reapable); every node's
reaper reads that hash (HGETALL) instead of XAUTOCLAIM per tenant lane.

Jobs are trivial (no sandbox, no GPU); their sizes are real ones: payload, result and artifact
bytes are options (defaults measured, see docs/capacity-plan.md). The report: achieved jobs/s and
Redis ops/s, client-side p50/p99 per operation, Redis CPU (INFO cpu and /proc), commandstats,
used_memory and peak, bytes in and out, and memory per retained key.

  bench/redis_sim/sim.py --rate 500 --duration 60 [--artifact-share 1 --artifact-bytes 2097152]
"""

import argparse
import asyncio
import hashlib
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA = os.path.join(ROOT, "queue", "lua", "kjudge.lua")
P = 0
TAG = "{p%d}" % P
GROUP = "kjudged"
LANES = (1, 0, -1)


def k_jobs(t, lane=0):
    return "kj:%s:jobs:%s%s" % (TAG, t, ":high" if lane > 0 else ":low" if lane < 0 else "")


def k(kind, *rest):
    return ":".join(["kj", TAG, kind] + list(rest))


def k_breq(t, lane=0):
    return "kj:%s:breq:%s%s" % (TAG, t, ":high" if lane > 0 else ":low" if lane < 0 else "")


# ---------------------------------------------------------------------------------------------
# A small RESP2 client over a unix socket (asyncio). One command in flight per connection, or a
# pipeline; as hiredis is used by libkjqueue (one connection per thread).

class RedisError(Exception):
    pass


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = b"%d" % a
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


class Conn:
    sent = 0  # commands this process wrote (top level: a pipeline counts each command)

    def __init__(self, reader, writer):
        self.r, self.w = reader, writer
        self.lock = asyncio.Lock()  # coroutines sharing a connection take turns, as one thread would

    @classmethod
    async def open(cls, path):
        r, w = await asyncio.open_unix_connection(path, limit=1 << 27)
        return cls(r, w)

    async def _reply(self):
        line = await self.r.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest
        if t == b"-":
            return RedisError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = await self.r.readexactly(n + 2)
            return data[:-2]
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [await self._reply() for _ in range(n)]
        raise RedisError("bad reply %r" % line[:40])

    async def call(self, *args):
        Conn.sent += 1
        async with self.lock:
            self.w.write(encode(args))
            r = await self._reply()
        if isinstance(r, RedisError):
            raise r
        return r

    async def pipeline(self, cmds):
        Conn.sent += len(cmds)
        async with self.lock:
            self.w.write(b"".join(encode(c) for c in cmds))
            return [await self._reply() for _ in cmds]


# ---------------------------------------------------------------------------------------------
# Latency histograms: log buckets of 2 % from 10 us; merged across processes by adding.

B0, BR = 0.01, math.log(1.02)


class Stats:
    def __init__(self):
        self.h = {}
        self.n = {}
        self.on = False
        self.count = {}

    def add(self, op, ms, n=1):
        if not self.on:
            return
        b = 0 if ms <= B0 else int(math.log(ms / B0) / BR) + 1
        h = self.h.setdefault(op, {})
        h[b] = h.get(b, 0) + 1
        self.n[op] = self.n.get(op, 0) + n

    def inc(self, what, n=1):
        if self.on:
            self.count[what] = self.count.get(what, 0) + n


def merge(stats):
    h, n, c = {}, {}, {}
    for s in stats:
        for op, hb in s["h"].items():
            d = h.setdefault(op, {})
            for b, v in hb.items():
                d[b] = d.get(b, 0) + v
        for op, v in s["n"].items():
            n[op] = n.get(op, 0) + v
        for op, v in s["count"].items():
            c[op] = c.get(op, 0) + v
    return h, n, c


def pct(hb, q):
    total = sum(hb.values())
    acc = 0
    for b in sorted(hb):
        acc += hb[b]
        if acc >= q * total:
            return B0 * math.exp(BR * b) if b else B0
    return float("nan")


async def timed(st, op, coro, n=1):
    t0 = time.perf_counter()
    r = await coro
    st.add(op, (time.perf_counter() - t0) * 1000, n)
    return r


def wall_ms():
    return int(time.time() * 1000)


def content_key(job_id):
    return hashlib.sha256(job_id.encode()).hexdigest()


def write_file(store, value, digest):
    """FileArtifactStore::put: a temp file in the digest's directory, renamed over the name (no
    fsync here: the sim measures Redis, and the box's disk is shared). -> the marker."""
    d = os.path.join(store, digest[:2])
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".tmp-%s-%d-%d" % (digest, os.getpid(), random.getrandbits(32)))
    with open(tmp, "wb") as f:
        f.write(value)
    os.rename(tmp, os.path.join(d, digest))
    return "kjref1 %s %d" % (digest, len(value))


def read_file(store, marker):
    """FileArtifactStore::get: the file the marker names, its size and SHA-256 checked; None: a miss."""
    _, digest, size = marker.decode().split()
    try:
        with open(os.path.join(store, digest[:2], digest), "rb") as f:
            v = f.read()
    except OSError:
        return None
    if len(v) != int(size) or hashlib.sha256(v).hexdigest() != digest:
        return None
    return v


# ---------------------------------------------------------------------------------------------
# Clients: judge_many per group.

async def client_proc(a, idx, sock, st, stop_at):
    rate = a.rate / a.client_procs
    period = a.group / rate
    tenants = ["t%d" % i for i in range(a.tenants)]
    payload_n = os.urandom(a.payload_bytes - 1)
    seq = 0
    pool = []
    sub = await Conn.open(sock)
    waiters = set()

    async def wait_many(c, tenant, ids, t_sub, timeout_s):
        # Client.wait_many: the newest event id, MGET of the missing, XREAD BLOCK until they are done
        done = k("done", tenant)
        newest = await timed(st, "wait.xrevrange", c.call("XREVRANGE", done, "+", "-", "COUNT", 1))
        last = newest[0][0] if newest else b"0-0"
        raws = await timed(st, "wait.mget", c.call("MGET", *[k("result", tenant, j) for j in ids]))
        now = time.perf_counter()
        found = [j for j, r in zip(ids, raws) if r is not None]
        missing = set(ids) - set(found)
        deadline = time.monotonic() + timeout_s
        while missing:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                break
            reply = await timed(st, "wait.xread", c.call("XREAD", "COUNT", 1000, "BLOCK", left, "STREAMS", done, last))
            if not reply:
                break
            fin = []
            for _s, entries in reply:
                for eid, fields in entries:
                    last = eid
                    st.inc("wait.events_read")
                    if fields and len(fields) >= 2 and fields[0] == b"id":
                        jid = fields[1].decode()
                        if jid in missing:
                            fin.append(jid)
            if fin:
                await timed(st, "wait.mget", c.call("MGET", *[k("result", tenant, j) for j in fin]))
                found += fin
                missing -= set(fin)
        now = time.perf_counter()
        for _ in found:
            st.add("e2e", (now - t_sub) * 1000)
        return found

    async def wait_group(tenant, ids, t_sub):
        # judge_many: wait_many(missing, 0.5 s) again and again until every result is there
        c = pool.pop() if pool else await Conn.open(sock)
        try:
            missing = list(ids)
            give_up = time.monotonic() + 120
            while missing and time.monotonic() < give_up:
                found = set(await wait_many(c, tenant, missing, t_sub, 0.5))
                missing = [j for j in missing if j not in found]
            st.inc("jobs.lost", len(missing))
            pool.append(c)
        except Exception as e:  # noqa: BLE001
            st.inc("client.error")
            print("client error", e, file=sys.stderr)

    next_t = time.monotonic() + random.random() * period
    while time.monotonic() < stop_at:
        now = time.monotonic()
        if now < next_t:
            await asyncio.sleep(next_t - now)
        next_t += period
        if time.monotonic() - next_t > 5:  # far behind: the client side is saturated
            st.inc("client.behind")
        tenant = tenants[(idx + seq) % len(tenants)]
        ids, cmds = [], []
        for _ in range(a.group):
            seq += 1
            jid = "c%d-%d" % (idx, seq)
            art = random.random() < a.artifact_share
            payload = (b"A" if art else b"N") + payload_n
            ids.append(jid)
            cmds.append(("FCALL", "kj_submit", 3, k_jobs(tenant), k("job", tenant, jid), k("queued", tenant),
                         jid, payload, tenant, k("tenants"), k("quotas"), "", 0))
        t_sub = time.perf_counter()
        replies = await timed(st, "submit(group)", sub.pipeline(cmds))
        bad = [r for r in replies if isinstance(r, RedisError)]
        if bad:
            st.inc("submit.error", len(bad))
            print("submit error", bad[0], file=sys.stderr)
        st.inc("jobs.submitted", len(ids))
        t = asyncio.ensure_future(wait_group(tenant, ids, t_sub))
        waiters.add(t)
        t.add_done_callback(waiters.discard)
    if waiters:
        await asyncio.wait(waiters, timeout=10)


# ---------------------------------------------------------------------------------------------
# A judging node (kjudged).

class Node:
    def __init__(self, a, name, sock, st, stop_at):
        self.a, self.name, self.sock, self.st, self.stop_at = a, name, sock, st, stop_at
        self.slots = a.slots_per_node
        self.busy = 0
        self.held = {}  # entry id -> (tenant, lane, job id)
        self.tenants = []
        self.tenants_read = 0.0
        self.slot_free = asyncio.Event()
        self.slot_conns = []
        self.rr = 0
        self.housekeeper = False  # plan: this node competes for the housekeeper lease
        self.hk = {"hold": 0.0, "promote": 0.0, "trim": time.monotonic() + 10, "reap": 0.0, "archs": 0.0}
        self.token = 0

    async def start(self):
        self.loop_c = await Conn.open(self.sock)
        self.fetch_c = await Conn.open(self.sock)
        await self.loop_c.call("DEL", k("drain", self.name))
        return [asyncio.ensure_future(x) for x in (self.heartbeat(), self.renew(), self.cancels(), self.fetch_loop())]

    def alive(self):
        return time.monotonic() < self.stop_at

    async def heartbeat(self):
        info = json.dumps({"version": "sim", "workers": self.slots, "busy": 0, "jobs_done": 0, "pid": 1,
                           "draining": False, "gpus": [{"gpu": i, "state": "healthy", "jobs": 0}
                                                       for i in range(self.slots)],
                           "gpu_jobs": {}, "cuda_arch_list": "9.0"})
        await asyncio.sleep(random.random() * 2)
        while self.alive():
            c, st = self.loop_c, self.st
            await timed(st, "node.heartbeat(3)", self._hb(c, info))
            await asyncio.sleep(2)

    async def _hb(self, c, info):
        await c.call("SET", k("node", self.name), info, "EX", 15)
        if self.a.plan:  # the architecture in one hash (build nodes read it instead of every heartbeat)
            await c.call("HSET", k("archs"), self.name, "%d 9.0" % (wall_ms() + 15000))
        await c.call("EXISTS", k("drain", self.name))
        await c.call("EXISTS", k("gpuclear", self.name))

    async def renew(self):
        await asyncio.sleep(random.random() * 10)
        while self.alive():
            by = {}
            for eid, (t, lane, _j) in list(self.held.items()):
                by.setdefault((t, lane), []).append(eid)
            for (t, lane), ids in by.items():
                await timed(self.st, "node.kj_lease", self.loop_c.call(
                    "FCALL", "kj_lease", 1, k_jobs(t, lane), "renew", self.name, 30000, *ids))
            await asyncio.sleep(10)

    async def cancels(self):
        await asyncio.sleep(random.random() * 0.5)
        while self.alive():
            running = [(t, j) for (t, _l, j) in list(self.held.values())]
            if running:
                await timed(self.st, "node.cancel_poll", self.loop_c.pipeline(
                    [("EXISTS", k("cancel", t, j)) for t, j in running]))
            await asyncio.sleep(0.5)

    async def refresh_tenants(self, force=False):
        ttl = 0.1 if not self.tenants else 0.5
        if not force and time.monotonic() - self.tenants_read < ttl:
            return
        c = self.fetch_c
        fresh = sorted(x.decode() for x in await timed(self.st, "node.smembers", c.call("SMEMBERS", k("tenants"))))
        new = [t for t in fresh if t not in self.tenants] if self.a.plan else fresh  # plan: new tenants only
        if new:
            await timed(self.st, "node.xgroup_create", c.pipeline(
                [("XGROUP", "CREATE", k_jobs(t, l), GROUP, "0", "MKSTREAM") for t in new for l in LANES]))
        self.tenants = fresh
        self.tenants_read = time.monotonic()

    async def fetch_loop(self):
        c, st, a = self.fetch_c, self.st, self.a
        next_reap = next_promote = next_caps = time.monotonic()
        next_trim = time.monotonic() + 10 * random.random()
        while self.alive():
            now = time.monotonic()
            if now >= next_caps:
                await timed(st, "node.caps", c.call("HGETALL", k("caps")))
                next_caps = now + 1
            free = self.slots - self.busy
            if self.a.plan and self.housekeeper:
                await self.housekeeping(c)
            if now >= next_reap:
                if free > 0:
                    await self.refresh_tenants()
                    where = self.tenants
                    if self.a.plan:  # only where the housekeeper found idle entries
                        r = await timed(st, "node.hgetall_reapable", c.call("HGETALL", k("reapable")))
                        where = [x.decode() for x in r[::2] if x != b"~"] if r else self.tenants
                    for t in where:
                        for lane in LANES:
                            r = await timed(st, "node.xautoclaim", c.call(
                                "XAUTOCLAIM", k_jobs(t, lane), GROUP, self.name, 30000, "0-0", "COUNT", free))
                            if r and r[1]:
                                st.inc("reaper.claimed", len(r[1]))
                next_reap = now + 1
            if now >= next_promote and not self.a.plan:
                await self.refresh_tenants()
                if self.tenants:
                    await timed(st, "node.promote_zcard", c.pipeline([("ZCARD", k("delayed", t)) for t in self.tenants]))
                next_promote = now + 0.25
            if now >= next_trim and not self.a.plan:
                await self.refresh_tenants()
                for t in self.tenants:
                    for lane in LANES:
                        await timed(st, "node.kj_trim", c.call("FCALL", "kj_trim", 1, k_jobs(t, lane)))
                next_trim = now + 10
            free = self.slots - self.busy
            if free == 0:
                self.slot_free.clear()
                try:
                    await asyncio.wait_for(self.slot_free.wait(), 0.2)
                except asyncio.TimeoutError:
                    pass
                continue
            await self.refresh_tenants()
            if not self.tenants:
                await asyncio.sleep(0.1)
                continue
            # the fair read: one pick per free slot over the tenants, kj_fetch pipelined per tenant
            want = {}
            for _ in range(free):
                t = self.tenants[self.rr % len(self.tenants)]
                self.rr += 1
                want[t] = want.get(t, 0) + 1
            now_ms = wall_ms()
            cmds = [("FCALL", "kj_fetch", 4, k_jobs(t, 1), k_jobs(t, 0), k_jobs(t, -1), k("running", t),
                     self.name, n, 30000, now_ms) for t, n in want.items()]
            replies = await timed(st, "node.kj_fetch", c.pipeline(cmds), len(cmds))
            got = 0
            for (t, _n), r in zip(want.items(), replies):
                if isinstance(r, RedisError):
                    st.inc("fetch.error")
                    continue
                for i in range(0, len(r), 2):
                    lane = LANES[r[i] - 1]
                    self.take(t, lane, r[i + 1])
                    got += 1
            if got == 0:
                streams = [k_jobs(t, l) for t in self.tenants for l in LANES]
                r = await timed(st, "node.xreadgroup_block", c.call(
                    "XREADGROUP", "GROUP", GROUP, self.name, "COUNT", 1, "BLOCK", 1000, "STREAMS",
                    *streams, *([">"] * len(streams))))
                for s in r or []:
                    key = s[0].decode()
                    t = key.split(":")[3]
                    lane = 1 if key.endswith(":high") else -1 if key.endswith(":low") else 0
                    for e in s[1]:
                        self.take(t, lane, e)

    async def housekeeping(self, c):
        """The elected housekeeper (src/daemon/housekeeper.cpp): hold the lease every 10/3 s; while
        holding, promote 4/s, kj_trim fenced every 10 s, the reaper's scan 1/s, archs prune every 10 s."""
        st, now, hk = self.st, time.monotonic(), self.hk
        if now >= hk["hold"]:
            self.token = await timed(st, "hk.hold", c.call("FCALL", "kj_housekeeper", 2, k("housekeeper"),
                                                           k("housekeeper", "epoch"), "hold", self.name, 10000))
            hk["hold"] = now + 10 / 3
        if not self.token:
            return
        await self.refresh_tenants()
        if now >= hk["promote"] and self.tenants:
            await timed(st, "hk.promote_zcard", c.pipeline([("ZCARD", k("delayed", t)) for t in self.tenants]))
            hk["promote"] = now + 0.25
        if now >= hk["trim"]:
            for t in self.tenants:
                for lane in LANES:
                    await timed(st, "hk.kj_trim", c.call("FCALL", "kj_trim", 1, k_jobs(t, lane), k("housekeeper"), self.token))
            hk["trim"] = now + 10
        if now >= hk["reap"] and self.tenants:
            r = await timed(st, "hk.xpending_idle", c.pipeline(
                [("XPENDING", k_jobs(t, l), GROUP, "IDLE", 30000, "-", "+", 1) for t in self.tenants for l in LANES]))
            idle = sorted({self.tenants[i // len(LANES)] for i, x in enumerate(r) if x and not isinstance(x, RedisError)})
            await c.pipeline([("DEL", k("reapable")), ("HSET", k("reapable"), "~", wall_ms(), *[y for t in idle for y in (t, 1)]),
                              ("PEXPIRE", k("reapable"), 3000)])
            hk["reap"] = now + 1
        if now >= hk["archs"]:
            await timed(st, "hk.archs", c.call("HGETALL", k("archs")))
            hk["archs"] = now + 10

    def take(self, tenant, lane, entry):
        eid, fields = entry[0].decode(), entry[1]
        f = {fields[i]: fields[i + 1] for i in range(0, len(fields), 2)}
        jid = f[b"id"].decode()
        self.busy += 1
        self.held[eid] = (tenant, lane, jid)
        self.st.inc("jobs.fetched")
        asyncio.ensure_future(self.slot(tenant, lane, eid, jid, f[b"job"][:1] == b"A"))

    async def slot(self, tenant, lane, eid, jid, artifact):
        st, a = self.st, self.a
        c = self.slot_conns.pop() if self.slot_conns else await Conn.open(self.sock)
        try:
            await timed(st, "slot.exists_cancel", c.call("EXISTS", k("cancel", tenant, jid)))
            if artifact:
                art = k("art", content_key(jid))
                t0 = time.perf_counter()
                while True:
                    if a.plan:  # a marker, then the file, verified
                        m = await timed(st, "slot.marker_get", c.call("GET", art))
                        v = m and read_file(a.store, m)
                        if v is not None:
                            st.inc("art.fetched")
                            st.inc("art.bytes_fetched_file", len(v))
                            break
                        n = None
                    else:
                        n = await timed(st, "slot.art_strlen", c.call("STRLEN", art))
                    if n:
                        v = await timed(st, "slot.art_get", c.call("GET", art))
                        st.inc("art.fetched")
                        st.inc("art.bytes_fetched", len(v or b""))
                        break
                    alive = await timed(st, "slot.zcount_builders", c.call("ZCOUNT", k("builders"), wall_ms(), "+inf"))
                    if not alive:  # no build node: builds itself (not simulated: no artifact traffic)
                        st.inc("art.local_build")
                        break
                    if time.perf_counter() - t0 > 60:
                        st.inc("art.wait_gave_up")
                        break
                    await asyncio.sleep(0.2)
                st.add("slot.art_wait_total", (time.perf_counter() - t0) * 1000)
            await asyncio.sleep(a.job_s)  # the GPU's work
            result = os.urandom(a.result_bytes)
            r = await timed(st, "slot.kj_complete", c.call(
                "FCALL", "kj_complete", 6, k("result", tenant, jid), k("done", tenant), k_jobs(tenant, lane),
                k("queued", tenant), "", k("dead", tenant),
                eid, jid, result, "OK", a.result_ttl, "", "", ""))
            st.inc("jobs.completed" if r == 1 else "jobs.duplicate")
        except Exception as e:  # noqa: BLE001
            st.inc("slot.error")
            print("slot error", type(e).__name__, e, file=sys.stderr)
        finally:
            self.held.pop(eid, None)
            self.busy -= 1
            self.slot_conns.append(c)
            self.slot_free.set()


# ---------------------------------------------------------------------------------------------
# A build node (kjudged --role build).

class BuildNode:
    def __init__(self, a, name, sock, st, stop_at, value):
        self.a, self.name, self.sock, self.st, self.stop_at, self.value = a, name, sock, st, stop_at, value
        self.slots = a.build_slots
        self.running = {}
        self.settled = set()
        self.known = {}  # entry -> content key
        self.tenants, self.tenants_read = [], 0.0
        self.pool = []
        self.owner = "%s/1/%d" % (name, random.getrandbits(32))

    def alive(self):
        return time.monotonic() < self.stop_at

    async def start(self):
        self.c = await Conn.open(self.sock)
        self.hb_c = await Conn.open(self.sock)
        if self.a.plan:
            await self.c.call("HSET", k("config"), "build_requests", 1)  # kj_submit writes requests from now on
        loop = self.logged(self.requests_loop() if self.a.plan else self.loop())
        return [asyncio.ensure_future(x) for x in (loop, self.heartbeat(), self.renew())]

    async def heartbeat(self):
        c, st = self.hb_c, self.st
        info = json.dumps({"version": "sim", "role": "build", "workers": self.slots, "busy": 0, "builds_done": 0, "pid": 1})
        await asyncio.sleep(random.random() * 2)
        while self.alive():
            t0 = time.perf_counter()
            await c.call("SET", k("node", self.name), info, "EX", 15)
            now = wall_ms()
            await c.call("ZADD", k("builders"), now + 15000, self.name)
            await c.call("ZREMRANGEBYSCORE", k("builders"), "-inf", now)
            if self.a.plan:  # the architectures from one small hash
                await c.call("HSET", k("config"), "build_requests", 1)
                await c.call("HGETALL", k("archs"))
                await c.call("EXISTS", k("drain", self.name))
                st.add("build.heartbeat(archs hash)", (time.perf_counter() - t0) * 1000)
                await asyncio.sleep(2)
                continue
            keys, cursor = set(), b"0"
            while True:  # q.nodes(): every node's heartbeat, for the CUDA architectures
                cursor, batch = await c.call("SCAN", cursor, "MATCH", k("node", "") + "*", "COUNT", 1000)
                keys.update(batch)
                if cursor == b"0":
                    break
            if keys:
                await c.pipeline([x for key in keys for x in (("GET", key), ("PTTL", key))])
            await c.call("EXISTS", k("drain", self.name))
            st.add("build.heartbeat(scan nodes)", (time.perf_counter() - t0) * 1000)
            await asyncio.sleep(2)

    async def renew(self):
        while self.alive():
            await asyncio.sleep(10)
            for key, t in list(self.running.items()):
                await timed(self.st, "build.kj_build_lease_renew", self.hb_c.call(
                    "FCALL", "kj_build_lease", 3, k("blease", key), k("building", t), k("caps"), "renew", self.owner, 30000, t))

    async def taken(self, key):
        return await timed(self.st, "build.exists_taken", self.c.call("EXISTS", k("art", key), k("blease", key))) != 0

    async def loop(self):
        c, st, a = self.c, self.st, self.a
        next_scan = 0.0
        while self.alive():
            await asyncio.sleep(0.2)
            free = self.slots - len(self.running)
            if time.monotonic() < next_scan or free <= 0:
                continue
            if time.monotonic() - self.tenants_read > 0.5:
                self.tenants = sorted(x.decode() for x in await c.call("SMEMBERS", k("tenants")))
                if self.tenants:
                    await c.pipeline([("XGROUP", "CREATE", k_jobs(t, l), GROUP, "0", "MKSTREAM")
                                      for t in self.tenants for l in LANES])
                self.tenants_read = time.monotonic()
            t0 = time.perf_counter()
            work = []
            for t in self.tenants:
                for lane in LANES:
                    work += await self.find(t, lane)
            st.add("build.scan_pass", (time.perf_counter() - t0) * 1000)
            started = 0
            for t, key, entry in work:
                if free <= 0:
                    break
                if key in self.running:
                    continue
                if await timed(st, "build.art_strlen", c.call("STRLEN", k("art", key))):
                    continue
                got = await timed(st, "build.kj_build_lease_acquire", c.call(
                    "FCALL", "kj_build_lease", 4, k("blease", key), k("building", t), k("caps"), k("art", key),
                    "acquire", self.owner, 30000, t, "1"))
                if got != b"ok":
                    continue
                self.running[key] = t
                free -= 1
                started += 1
                asyncio.ensure_future(self.build(t, key))
            if started == 0:
                next_scan = time.monotonic() + 0.5

    async def logged(self, coro):
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001
            self.st.inc("build.loop_failed")
            print("build loop failed", repr(e), file=sys.stderr)

    async def requests_loop(self):
        """BuildNode::dispatch with build requests (src/buildfarm/build_node.cpp, build_work.cpp)."""
        c, st = self.c, self.st
        groups = set()
        backlog = []
        while self.alive():
            await asyncio.sleep(0.2)
            free = self.slots - len(self.running)
            if free <= 0:
                continue
            if time.monotonic() - self.tenants_read > 0.5:
                self.tenants = sorted(x.decode() for x in await c.call("SMEMBERS", k("tenants")))
                self.tenants_read = time.monotonic()
            new = [t for t in self.tenants if t not in groups]
            if new:
                await c.pipeline([("XGROUP", "CREATE", k_breq(t, l), "kjbuild", "0", "MKSTREAM") for t in new for l in LANES])
                groups.update(new)
            streams = [k_breq(t, l) for t in self.tenants for l in LANES]
            if not streams or len(backlog) >= free + len(streams):
                continue
            count = max(1, free - len(backlog))
            block = ("BLOCK", 1000) if not self.running and not backlog else ()
            r = await timed(st, "build.xreadgroup", c.call("XREADGROUP", "GROUP", "kjbuild", self.name, "COUNT", count,
                                                            *block, "STREAMS", *streams, *([">"] * len(streams))))
            reqs = []
            for sname, entries in r or []:
                parts = sname.decode().split(":")
                t, lane = parts[3], 1 if sname.endswith(b":high") else -1 if sname.endswith(b":low") else 0
                for rid, fields in entries:
                    reqs.append((sname, rid, t, lane, fields[1] if fields and len(fields) > 1 else b"0-0"))
            if not reqs:
                continue
            st.inc("build.requests_read", len(reqs))
            jobs = await timed(st, "build.xrange_entries", c.pipeline(
                [("XRANGE", k_jobs(t, lane), e, e) for _s, _r, t, lane, e in reqs]), len(reqs))
            settled = []
            for (sname, rid, t, lane, e), j in zip(reqs, jobs):
                if not j or isinstance(j, RedisError):
                    settled.append((sname, rid))
                    continue
                f = {j[0][1][i]: j[0][1][i + 1] for i in range(0, len(j[0][1]), 2)}
                if f.get(b"job", b"N")[:1] != b"A":  # not a KernelBench-format job
                    settled.append((sname, rid))
                    continue
                jid = f[b"id"].decode()
                done = await timed(st, "build.exists_result", c.call("EXISTS", k("result", t, jid)))
                canc = await timed(st, "build.exists_cancel", c.call("EXISTS", k("cancel", t, jid)))
                key = content_key(jid)
                if done or canc or await self.taken(key):
                    settled.append((sname, rid))
                    continue
                backlog.append((t, jid, key, sname, rid))
            if settled:
                await timed(st, "build.xack", c.pipeline([("XACK", sn, "kjbuild", rid) for sn, rid in settled]))
            keep = []
            for t, jid, key, sname, rid in backlog:
                if free <= 0 or key in self.running:
                    keep.append((t, jid, key, sname, rid))
                    continue
                # build_unwanted, then the claim: the marker (fetch), kj_build_lease acquire
                await timed(st, "build.exists_result", c.call("EXISTS", k("result", t, jid)))
                await timed(st, "build.exists_cancel", c.call("EXISTS", k("cancel", t, jid)))
                await timed(st, "build.marker_get", c.call("GET", k("art", key)))
                got = await timed(st, "build.kj_build_lease_acquire", c.call(
                    "FCALL", "kj_build_lease", 4, k("blease", key), k("building", t), k("caps"), k("art", key),
                    "acquire", self.owner, 30000, t, "1"))
                if got != b"ok":
                    await timed(st, "build.xack", c.call("XACK", sname, "kjbuild", rid))
                    continue
                self.running[key] = t
                free -= 1
                asyncio.ensure_future(self.build(t, key, (sname, rid)))
            backlog = keep

    async def find(self, t, lane):
        c, st, a = self.c, self.st, self.a
        key = k_jobs(t, lane)
        summary = await timed(st, "build.xpending", c.call("XPENDING", key, GROUP))
        if summary and summary[0] > 0:
            frm = summary[1]
        else:
            groups = await timed(st, "build.xinfo_groups", c.call("XINFO", "GROUPS", key))
            last = b"0-0"
            for g in groups or []:
                d = {g[i]: g[i + 1] for i in range(0, len(g), 2)}
                if d.get(b"name") == GROUP.encode():
                    last = d.get(b"last-delivered-id")
            frm = b"(" + last
        entries = await timed(st, "build.xrange", c.call("XRANGE", key, frm, "+", "COUNT", a.scan_max))
        st.inc("build.entries_scanned", len(entries))
        out = []
        for eid, fields in entries:
            entry = key + "/" + eid.decode()
            if entry in self.settled:
                continue
            if entry in self.known:
                if await self.taken(self.known[entry]):
                    continue
            f = {fields[i]: fields[i + 1] for i in range(0, len(fields), 2)}
            if f.get(b"job", b"N")[:1] != b"A":  # not a KernelBench-format job: nothing to build
                self.settled.add(entry)
                continue
            jid = f[b"id"].decode()
            done = await timed(st, "build.exists_result", c.call("EXISTS", k("result", t, jid)))
            canc = await timed(st, "build.exists_cancel", c.call("EXISTS", k("cancel", t, jid)))
            if done or canc:
                self.settled.add(entry)
                continue
            ck = content_key(jid)
            self.known[entry] = ck
            if await self.taken(ck):
                continue
            out.append((t, ck, entry))
        if len(self.settled) > 200000:
            self.settled.clear()
        if len(self.known) > 200000:
            self.known.clear()
        return out

    async def build(self, t, key, request=None):
        st, a = self.st, self.a
        c = self.pool.pop() if self.pool else await Conn.open(self.sock)
        try:
            await asyncio.sleep(a.build_s)
            if a.plan:  # the file first, then the marker
                value = self.value + key.encode()
                marker = write_file(a.store, value, hashlib.sha256(value).hexdigest())
                await timed(st, "build.marker_set", c.call("SET", k("art", key), marker, "PX", a.artifact_ttl * 1000))
                st.inc("art.bytes_published_file", len(value))
            else:
                await timed(st, "build.art_set", c.call("SET", k("art", key), self.value, "PX", a.artifact_ttl * 1000))
                st.inc("art.bytes_published", len(self.value))
            st.inc("art.published")
            await timed(st, "build.kj_build_lease_release", c.call(
                "FCALL", "kj_build_lease", 3, k("blease", key), k("building", t), k("caps"), "release", self.owner, 1, t))
            if request:
                await timed(st, "build.xack", c.call("XACK", request[0], "kjbuild", request[1]))
        except Exception as e:  # noqa: BLE001
            st.inc("build.error")
            print("build error", e, file=sys.stderr)
        finally:
            self.running.pop(key, None)
            self.pool.append(c)


# ---------------------------------------------------------------------------------------------

async def prune_files(store, ttl, stop_at):
    """The housekeeper's prune of the file store (artifact_file_ttl_s), at the sim's short TTL."""
    while time.monotonic() < stop_at:
        await asyncio.sleep(1)
        cutoff = time.time() - ttl
        for root, _dirs, files in os.walk(store):
            for f in files:
                p = os.path.join(root, f)
                try:
                    if os.stat(p).st_mtime < cutoff:
                        os.unlink(p)
                except OSError:
                    pass


def child(role, idx, a, sock, t_measure, stop_wall, q):
    random.seed(idx * 7919 + hash(role))
    st = Stats()
    sent0 = [0]

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: None)  # errors are counted where they happen
        stop_at = time.monotonic() + (stop_wall - time.time())
        measure_at = time.monotonic() + (t_measure - time.time())

        async def flip():
            await asyncio.sleep(max(0, measure_at - time.monotonic()))
            st.on = True
            sent0[0] = Conn.sent

        asyncio.ensure_future(flip())
        tasks = []
        if role == "client":
            tasks.append(asyncio.ensure_future(client_proc(a, idx, sock, st, stop_at)))
        elif role == "nodes":
            names = ["gpu-node-%03d" % i for i in range(a.nodes) if i % a.node_procs == idx]
            for n in names:
                node = Node(a, n, sock, st, stop_at)
                node.housekeeper = True  # every kjudged asks for the lease; the holder works
                tasks += await node.start()
        elif role == "build":
            value = b"kjart1\n" + os.urandom(a.artifact_bytes - 7)
            names = ["build-node-%03d" % i for i in range(a.build_nodes)]
            for n in names:
                tasks += await BuildNode(a, n, sock, st, stop_at, value).start()
            if a.plan:
                tasks.append(asyncio.ensure_future(prune_files(a.store, a.artifact_ttl, stop_at)))
        await asyncio.sleep(max(0, stop_at - time.monotonic()))
        st.on = False
        st.count["sent." + role] = Conn.sent - sent0[0]
        await asyncio.wait(tasks, timeout=12)
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    try:
        asyncio.run(main())
    except Exception as e:  # noqa: BLE001
        print(role, idx, "failed:", repr(e), file=sys.stderr)
    q.put({"role": role, "h": st.h, "n": st.n, "count": st.count})


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def info(path, section):
    out = subprocess.run(["redis-cli", "-s", path, "INFO", section], capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        if ":" in line and not line.startswith("#"):
            kk, v = line.split(":", 1)
            d[kk] = v.strip()
    return d


def cli(path, *args):
    return subprocess.run(["redis-cli", "-s", path, *map(str, args)], capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=100, help="jobs/s submitted (open loop)")
    ap.add_argument("--gpus", type=int, default=0, help="GPU slots in the fleet (default: the rate, 1 cand/s each)")
    ap.add_argument("--slots-per-node", type=int, default=8, help="GPUs (job slots) per judging node")
    ap.add_argument("--job-s", type=float, default=0.5, help="simulated GPU seconds per job")
    ap.add_argument("--tenants", type=int, default=4)
    ap.add_argument("--group", type=int, default=64, help="jobs per judge_many call (one submit pipeline, one waiter)")
    ap.add_argument("--payload-bytes", type=int, default=4096, help="job protobuf bytes (median KernelBench cuda job: 4,068)")
    ap.add_argument("--result-bytes", type=int, default=1738, help="Result protobuf bytes (median measured: 1,738)")
    ap.add_argument("--result-ttl", type=int, default=86400)
    ap.add_argument("--artifact-share", type=float, default=0.0, help="share of jobs with a shared build (0..1)")
    ap.add_argument("--artifact-bytes", type=int, default=2 << 20)
    ap.add_argument("--artifact-ttl", type=int, default=21600)
    ap.add_argument("--build-nodes", type=int, default=0, help="default: 0, or 8 with --artifact-share > 0")
    ap.add_argument("--build-slots", type=int, default=64)
    ap.add_argument("--build-s", type=float, default=0.3, help="simulated seconds per build")
    ap.add_argument("--scan-max", type=int, default=256)
    ap.add_argument("--client-procs", type=int, default=2)
    ap.add_argument("--node-procs", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--io-threads", type=int, default=1, help="redis io-threads (1: none)")
    ap.add_argument("--json", help="append the row as JSON to this file")
    ap.add_argument("--plan", action="store_true",
                    help="the capacity plan's steps 1-3 as built: file store, 1 h TTLs, build requests, housekeeper")
    a = ap.parse_args()
    a.gpus = a.gpus or max(a.slots_per_node, int(round(a.rate)))
    a.nodes = math.ceil(a.gpus / a.slots_per_node)
    a.slots_per_node = min(a.slots_per_node, a.gpus)
    if a.build_nodes == 0 and a.artifact_share > 0:
        a.build_nodes = 8

    d = tempfile.mkdtemp(prefix="kjsim.", dir="/tmp")
    a.store = os.path.join(d, "artifacts")
    if a.plan:
        os.makedirs(a.store)
        a.result_ttl = min(a.result_ttl, 3600)
    sock = os.path.join(d, "redis.sock")
    rs = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
                           "--dir", d, "--logfile", os.path.join(d, "redis.log"), "--maxclients", "20000",
                           "--io-threads", str(a.io_threads)])
    try:
        for _ in range(500):
            if os.path.exists(sock) and cli(sock, "PING") == "PONG":
                break
            time.sleep(0.01)
        with open(LUA) as f:
            code = f.read()
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        s.sendall(encode(("FUNCTION", "LOAD", "REPLACE", code)))
        assert s.recv(100).startswith(b"$6\r\nkjudge"), "FUNCTION LOAD failed"
        s.sendall(encode(("HSET", k("config"), "max_job_bytes", 8 << 20, "marker_ttl_s", 3600 if a.plan else 604800)))  # as kjudged at start
        s.recv(100)
        s.close()

        t0 = time.time()
        t_measure = t0 + 2 + a.warmup
        stop_wall = t_measure + a.duration
        q = mp.Queue()
        procs = []
        for i in range(a.client_procs):
            procs.append(mp.Process(target=child, args=("client", i, a, sock, t_measure, stop_wall, q)))
        for i in range(a.node_procs):
            procs.append(mp.Process(target=child, args=("nodes", i, a, sock, t_measure, stop_wall, q)))
        if a.build_nodes:
            procs.append(mp.Process(target=child, args=("build", 0, a, sock, t_measure, stop_wall, q)))
        for p in procs:
            p.start()

        time.sleep(max(0, t_measure - time.time()))
        cli(sock, "CONFIG", "RESETSTAT")
        cpu0 = info(sock, "cpu")
        rcpu0, ccpu0 = proc_cpu(rs.pid), sum(proc_cpu(p.pid) for p in procs)
        m0 = int(info(sock, "memory")["used_memory"])
        tm0 = time.time()
        mem_max, mem_samples = m0, []
        while time.time() < stop_wall:
            time.sleep(1)
            m = int(info(sock, "memory")["used_memory"])
            mem_max = max(mem_max, m)
            mem_samples.append((time.time() - tm0, m))
        el = time.time() - tm0
        cpu1 = info(sock, "cpu")
        rcpu1, ccpu1 = proc_cpu(rs.pid), sum(proc_cpu(p.pid) for p in procs)
        stats = info(sock, "stats")
        cmdstats = info(sock, "commandstats")
        mem = info(sock, "memory")
        clients = info(sock, "clients")
        ks = info(sock, "keyspace")
        sizes = {}
        for kind, pat in (("result", k("result", "") + "*"), ("job marker", k("job", "") + "*"),
                          ("artifact", k("art", "") + "*")):
            got = cli(sock, "SCAN", 0, "MATCH", pat, "COUNT", 5000).split("\n")[1:]
            us = [int(cli(sock, "MEMORY", "USAGE", x, "SAMPLES", 0) or 0) for x in got[:20]]
            if us:
                sizes[kind] = sum(us) / len(us)
        for t in range(a.tenants):
            sizes.setdefault("jobs stream t0 (bytes, entries)", (cli(sock, "MEMORY", "USAGE", k_jobs("t%d" % t)),
                                                                 cli(sock, "XLEN", k_jobs("t%d" % t))))

        rows = []
        for _ in procs:
            rows.append(q.get(timeout=60))
        for p in procs:
            p.join(timeout=30)
        h, n, c = merge(rows)

        redis_cpu = (float(cpu1["used_cpu_user"]) + float(cpu1["used_cpu_sys"]) -
                     float(cpu0["used_cpu_user"]) - float(cpu0["used_cpu_sys"])) / el
        calls = {}
        busy_us = 0.0
        for key, v in cmdstats.items():
            f = dict(x.split("=") for x in v.split(","))
            calls[key[len("cmdstat_"):]] = (int(f["calls"]), float(f["usec"]), float(f["usec_per_call"]))
        ops = int(stats["total_commands_processed"])
        slope = 0.0
        if len(mem_samples) > 2:
            xs = [x for x, _ in mem_samples]
            ys = [y for _, y in mem_samples]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(1e-9, sum((x - mx) ** 2 for x in xs))
        done = c.get("jobs.completed", 0)
        res = {
            "rate_target": a.rate, "gpus": a.gpus, "nodes": a.nodes, "build_nodes": a.build_nodes,
            "plan": a.plan, "tenants": a.tenants, "group": a.group, "artifact_share": a.artifact_share,
            "artifact_bytes": a.artifact_bytes, "payload_bytes": a.payload_bytes, "result_bytes": a.result_bytes,
            "seconds": round(el, 1),
            "jobs_submitted_per_s": round(c.get("jobs.submitted", 0) / el, 1),
            "jobs_completed_per_s": round(done / el, 1),
            "client_cmds_per_s": round(sum(v for kk, v in c.items() if kk.startswith("sent.")) / el),
            "client_cmds_per_job": round(sum(v for kk, v in c.items() if kk.startswith("sent.")) / max(1, done), 1),
            "redis_cmds_per_s": round(ops / el),
            "redis_cmds_per_job": round(ops / max(1, done), 1),
            "commandstats_calls_per_s": round(sum(v[0] for v in calls.values()) / el),
            "redis_cpu_cores": round(redis_cpu, 3),
            "redis_cpu_proc_cores": round((rcpu1 - rcpu0) / el, 3),
            "redis_cpu_us_per_job": round(redis_cpu * 1e6 / max(1, done / el), 1),
            "sim_cpu_cores": round((ccpu1 - ccpu0) / el, 3),
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "net_in_MBps": round(int(stats["total_net_input_bytes"]) / el / 1e6, 2),
            "net_out_MBps": round(int(stats["total_net_output_bytes"]) / el / 1e6, 2),
            "used_memory_MB_start": round(m0 / 1e6, 1), "used_memory_MB_end": round(int(mem["used_memory"]) / 1e6, 1),
            "used_memory_peak_MB": round(int(mem["used_memory_peak"]) / 1e6, 1),
            "used_memory_growth_MBps": round(slope / 1e6, 3),
            "connected_clients": int(clients["connected_clients"]),
            "keyspace": ks.get("db0", ""),
            "key_bytes": sizes,
            "counts": c,
            "latency_ms": {op: {"n": sum(hb.values()), "p50": round(pct(hb, 0.5), 3), "p99": round(pct(hb, 0.99), 3),
                                "max": round(pct(hb, 1.0), 1)} for op, hb in sorted(h.items())},
            "commandstats": {kk: {"per_s": round(v[0] / el, 1), "usec_per_call": v[2], "busy_share": round(v[1] / 1e6 / el, 4)}
                             for kk, v in sorted(calls.items(), key=lambda kv: -kv[1][1])},
        }
        print(json.dumps(res, indent=1))
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(res) + "\n")
    finally:
        rs.terminate()
        rs.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
