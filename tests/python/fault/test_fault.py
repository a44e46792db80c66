"""Fault tests of the queue and kjudged (design §8, issue 4): real redis-server, real kjudged
processes, TrivialTask jobs (a sandboxed /bin/true or /bin/sleep) so nothing depends on compilers.

Each test prints a one-line summary (pytest -s shows it); the counts asserted are the claims:
every job exactly one stored result, none lost, no duplicates, fairness within one slot.

Needs a build (KJUDGE_BUILD_DIR, default build-test) and namespaces for the sandbox.
"""

import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import redis

from kjudge import keys
from kjudge.client import Client, completion_counts
from kjudge.v1 import job_pb2, result_pb2, verdict_pb2

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
BIN = BUILD / "bin"
REDIS_SERVER = os.environ.get("KJUDGE_REDIS_SERVER", "/usr/bin/redis-server")
LUA = ROOT / "queue" / "lua" / "kjudge.lua"


_REDIS_PROCS = []  # killed by the workdir fixture


class RedisProc:
    """A redis-server on a unix socket that can be killed and restarted on the same socket."""

    def __init__(self, d, aof=False):
        _REDIS_PROCS.append(self)
        self.dir = d
        self.sock = os.path.join(d, "redis.sock")
        self.aof = aof
        self.proc = None
        self.start()

    @property
    def url(self):
        return "unix://" + self.sock

    def start(self):
        args = [REDIS_SERVER, "--port", "0", "--unixsocket", self.sock, "--unixsocketperm", "700", "--dir", self.dir,
                "--save", "", "--logfile", os.path.join(self.dir, "redis.log")]
        args += ["--appendonly", "yes", "--appendfsync", "always"] if self.aof else ["--appendonly", "no"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis.Redis(unix_socket_path=self.sock).ping():
                    return
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.01)

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def client(self):
        return redis.Redis(unix_socket_path=self.sock)


class Daemon:
    """One kjudged process (a node). kill()/start() keep the node name, like systemd restarting it."""

    def __init__(self, redis_url, d, node, workers=2, lease_ms=2000, extra=""):
        self.redis_url, self.node = redis_url, node
        self.state = Path(tempfile.mkdtemp(prefix="kjfault-state.", dir="/tmp"))
        self.state.chmod(0o711)
        self.cfg = Path(d) / f"{node}.toml"
        self.cfg.write_text(f"""
[daemon]
node = "{node}"
state_dir = "{self.state}"
workers = {workers}
[queue]
lease_ms = {lease_ms}
reap_interval_ms = 200
retry_base_ms = 50
retry_max_ms = 200
cancel_poll_ms = 100
trim_interval_ms = 1000
drain_timeout_ms = 20000
{extra}
""")
        self.log_path = Path(d) / f"{node}.log"
        self.proc = None
        self.starts = 0
        self.start()

    def start(self, wait=True):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([str(BIN / "kjudged"), "--config", str(self.cfg), "--redis", self.redis_url],
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.starts += 1
        if wait:
            self.wait_started()

    def wait_started(self, timeout=30):
        # up once its heartbeat names this process
        rc = redis.Redis(unix_socket_path=self.redis_url[len("unix://"):])
        deadline = time.monotonic() + timeout
        while True:
            info = rc.get(keys.node(0, self.node))
            if info and json.loads(info).get("pid") == self.proc.pid:
                return
            assert self.proc.poll() is None, self.log_tail()[-3000:]
            assert time.monotonic() < deadline, "kjudged did not start"
            time.sleep(0.02)

    def log_tail(self):
        return self.log_path.read_text() if self.log_path.exists() else ""

    def events(self, name):
        out = []
        for line in self.log_tail().splitlines():
            if line.startswith("{"):
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("event") == name:
                    out.append(e)
        return out

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.alive():
            rc = self.kill(signal.SIGTERM)
            assert rc == 0, self.log_tail()[-3000:]


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="kjfault.", dir="/tmp")  # short: unix socket paths
    yield d
    while _REDIS_PROCS:
        p = _REDIS_PROCS.pop()
        if p.proc is not None and p.proc.poll() is None:
            p.kill()
    subprocess.run(["rm", "-rf", d])


@pytest.fixture
def daemons():
    made = []
    yield made
    for d in made:
        if d.alive():
            d.proc.kill()
            d.proc.wait()
        subprocess.run(["rm", "-rf", str(d.state)])


def trivial(job_id, tenant="t", argv=("/bin/true",), batch="", **kw):
    job = job_pb2.Job(job_id=job_id, tenant=tenant, batch_id=batch, **kw)
    job.trivial.argv.extend(argv)
    job.submitted_at.GetCurrentTime()
    return job


def client_for(r):
    c = Client(r.url)
    c.load_functions(replace=True)
    return c


def wait_all(c, tenant, ids, timeout):
    out = c.wait_many(tenant, ids, timeout)
    return {k: v for k, v in out.items() if v is not None}


def test_sigkill_a_daemon_mid_job_50_times_nothing_lost(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    for i in range(3):
        daemons.append(Daemon(r.url, workdir, f"n{i}", workers=2, lease_ms=1000))
    ids = [f"k{i}" for i in range(600)]
    c.submit_many([trivial(j, argv=("/bin/sleep", "0.05")) for j in ids])
    rng = random.Random(7)
    kills = mid_job = 0
    for _ in range(50):
        time.sleep(rng.uniform(0.05, 0.25))
        victim = rng.choice(daemons)
        pending = r.client().xpending_range(keys.jobs(0, "t"), keys.GROUP, "-", "+", 1000, consumername=victim.node)
        mid_job += 1 if pending else 0
        victim.kill(signal.SIGKILL)
        kills += 1
        victim.start(wait=False)
    for d in daemons:
        d.wait_started()
    got = wait_all(c, "t", ids, 180)
    events = completion_counts(r.client(), "t")
    lost = [j for j in ids if j not in got]
    dup = [j for j, n in events.items() if n != 1]
    statuses = {}
    for res in got.values():
        statuses[verdict_pb2.Verdict.Name(res.status)] = statuses.get(verdict_pb2.Verdict.Name(res.status), 0) + 1
    redundant = sum(1 for d in daemons for e in d.events("job.done") if not e.get("stored"))
    print(f"\nFAULT sigkill: jobs={len(ids)} kills={kills} mid_job_kills={mid_job} results={len(got)} "
          f"lost={len(lost)} duplicate_results={len(dup)} redundant_runs={redundant} verdicts={statuses}")
    assert kills == 50 and mid_job >= 25
    assert not lost and not dup and len(events) == len(ids)
    # a job may be dead-lettered only if it really was delivered max_deliveries times; OK otherwise
    assert statuses.get("OK", 0) + statuses.get("INFRA_ERROR", 0) == len(ids)
    assert r.client().xpending(keys.jobs(0, "t"), keys.GROUP)["pending"] == 0


def test_redis_restart_with_aof_mid_run_nothing_lost(workdir, daemons):
    r = RedisProc(workdir, aof=True)
    c = client_for(r)
    for i in range(2):
        daemons.append(Daemon(r.url, workdir, f"a{i}", workers=2))
    ids = [f"r{i}" for i in range(150)]
    c.submit_many([trivial(j, argv=("/bin/sleep", "0.02")) for j in ids])
    time.sleep(1.0)
    r.kill()  # a crash: whatever AOF (appendfsync always) has is what comes back
    time.sleep(1.0)
    r.start()
    got = wait_all(Client(r.url), "t", ids, 120)
    events = completion_counts(r.client(), "t")
    lost = [j for j in ids if j not in got]
    print(f"\nFAULT redis-restart: jobs={len(ids)} results={len(got)} lost={len(lost)} "
          f"duplicate_results={sum(1 for n in events.values() if n != 1)}")
    assert not lost
    assert all(n == 1 for n in events.values())
    assert all(res.status == verdict_pb2.OK for res in got.values())
    for d in daemons:
        assert d.alive()
        assert d.events("fetch.failed") or d.events("job.complete_failed") or d.events("heartbeat.failed")


def test_three_nodes_kill_one_its_jobs_finish_elsewhere_within_the_lease(workdir, daemons):
    lease_s = 2.0
    r = RedisProc(workdir)
    c = client_for(r)
    for i in range(3):
        daemons.append(Daemon(r.url, workdir, f"m{i}", workers=2, lease_ms=int(lease_s * 1000)))
    ids = [f"l{i}" for i in range(12)]
    c.submit_many([trivial(j, argv=("/bin/sleep", "1")) for j in ids])
    victim = daemons[0]
    deadline = time.monotonic() + 10
    while True:
        pend = r.client().xpending_range(keys.jobs(0, "t"), keys.GROUP, "-", "+", 100, consumername=victim.node)
        if pend:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)
    entries = {p["message_id"] for p in pend}
    theirs = [f[b"id"].decode() for eid, f in r.client().xrange(keys.jobs(0, "t"), "-", "+") if eid in entries]
    t_kill = time.monotonic()
    victim.kill(signal.SIGKILL)
    got = wait_all(c, "t", theirs, 30)
    took = time.monotonic() - t_kill
    others = {res.worker.split("/")[0] for res in got.values()}
    print(f"\nFAULT node-loss: victim_jobs={len(theirs)} finished_elsewhere={len(got)} by={sorted(others)} "
          f"seconds_after_kill={took:.2f} (lease {lease_s} s + job 1 s)")
    assert len(got) == len(theirs)
    assert victim.node not in others
    # claimable after the lease, picked up within a reap interval, then one job's run
    assert took <= lease_s + 1.0 + 1.5
    all_got = wait_all(c, "t", ids, 60)
    assert len(all_got) == len(ids)


def slot_turnaround(results):
    """The longest a slot stayed idle between one job's end and its next job's start: the node's
    scheduling noise (fetch round trip, sandbox start), measured on the jobs given."""
    by_slot = {}
    for x in results:
        by_slot.setdefault(x.worker, []).append((x.started_at.ToNanoseconds(), x.finished_at.ToNanoseconds()))
    gaps = [(b[0] - a[1]) / 1e9 for runs in by_slot.values() for a, b in zip(sorted(runs), sorted(runs)[1:])]
    assert gaps, "no slot ran two of the jobs"
    return max(gaps)


def test_one_tenant_floods_10000_jobs_the_other_starts_within_one_slot(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    flood = [trivial(f"f{i}", tenant="flood", argv=("/bin/sleep", "0.2")) for i in range(10000)]
    c.submit_many(flood)
    daemons.append(Daemon(r.url, workdir, "fair", workers=2))
    time.sleep(1.5)  # both slots busy with the flood
    # The quiet tenant's first job registers it; nodes re-read the tenant set every second, so
    # that one job may wait up to a second longer. Reported, not part of the claim.
    first = trivial("q-first", tenant="quiet")
    t0 = time.time()
    c.submit(first)
    first_wait = c.wait("quiet", "q-first", 30).started_at.ToNanoseconds() / 1e9 - t0
    waits, quiet = [], []
    for i in range(8):
        job = trivial(f"q{i}", tenant="quiet")
        t0 = time.time()
        c.submit(job)
        res = c.wait("quiet", job.job_id, 30)
        assert res is not None and res.status == verdict_pb2.OK
        waits.append(res.started_at.ToNanoseconds() / 1e9 - t0)
        quiet.append(res)
        time.sleep(random.uniform(0.05, 0.3))
    flood_done = [x for x in c.wait_many("flood", [f"f{i}" for i in range(200)], 0).values() if x is not None]
    slot = sorted((x.finished_at.ToNanoseconds() - x.started_at.ToNanoseconds()) / 1e9 for x in flood_done)
    slot_p50 = slot[len(slot) // 2]
    noise = slot_turnaround(flood_done + quiet)  # a quiet job between two flood jobs is no gap
    lag = r.client().xinfo_groups(keys.jobs(0, "flood"))[0]["lag"]
    print(f"\nFAIRNESS flood=10000 queued (still {lag} undelivered) quiet_jobs={len(waits)} "
          f"quiet_wait_max={max(waits):.3f}s p50={sorted(waits)[len(waits)//2]:.3f}s one_slot(flood job)={slot_p50:.3f}s "
          f"max={slot[-1]:.3f}s slot turnaround max={noise:.3f}s (first job of the new tenant: {first_wait:.3f}s)")
    assert lag > 9000
    # "within one slot's time": the quiet tenant's job starts no later than one flood job takes,
    # plus the node's turnaround between two jobs on a slot (fetch, start), both as measured in
    # this run: a fixed 50 ms for the turnaround failed on a loaded 2-core host. Unfair, it would
    # wait behind 10,000 jobs.
    assert max(waits) <= slot[-1] + noise + 0.01


def test_weighted_round_robin_shares_slots_by_weight(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    c.submit_many([trivial(f"h{i}", tenant="heavy") for i in range(150)] + [trivial(f"l{i}", tenant="light") for i in range(150)])
    daemons.append(Daemon(r.url, workdir, "wrr", workers=2, extra="[tenants.heavy]\nweight = 3\n"))
    time.sleep(0.5)
    ids_h = [f"h{i}" for i in range(150)]
    ids_l = [f"l{i}" for i in range(150)]
    res = [(x.started_at.ToNanoseconds(), "heavy") for x in wait_all(c, "heavy", ids_h, 60).values()]
    res += [(x.started_at.ToNanoseconds(), "light") for x in wait_all(c, "light", ids_l, 60).values()]
    first = [t for _, t in sorted(res)[:120]]
    ratio = first.count("heavy") / max(1, first.count("light"))
    print(f"\nFAIRNESS weights heavy:light=3:1 -> first 120 starts {first.count('heavy')}:{first.count('light')} (ratio {ratio:.2f})")
    assert 2.3 <= ratio <= 3.7


def test_malformed_entries_wrong_types_huge_payloads_unknown_tenants_and_redis_errors(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = r.client()
    d = Daemon(r.url, workdir, "tough", workers=2, extra="")
    daemons.append(d)
    stream = keys.jobs(0, "t")
    c.submit(trivial("warmup"))
    assert c.wait("t", "warmup", 30).status == verdict_pb2.OK
    rc.xadd(stream, {"nothing": "here"})                                   # no id, no job
    rc.xadd(stream, {"id": "garbage", "job": b"\xff\x00\x01garbage"})      # not a protobuf
    rc.xadd(stream, {"id": "huge", "job": b"\x0a" + b"x" * (9 << 20)})     # over max_job_bytes (8 MiB)
    rc.xadd(stream, {"id": "other", "job": trivial("other", tenant="someone-else").SerializeToString()})
    rc.xadd(stream, {"id": "bad argv", "job": trivial("x").SerializeToString()})   # invalid job id field
    rc.xadd(stream, {"id": "argv", "job": trivial("argv", argv=("/bin/sh", "-c", "id")).SerializeToString()})
    rc.xadd(stream, {"id": "mismatch", "job": trivial("not-mismatch").SerializeToString()})
    rc.sadd(keys.tenants(0), "Bad Tenant!", "wrongtype")                   # unknown/invalid tenants
    rc.set(keys.jobs(0, "wrongtype"), "a string, not a stream")           # wrong type
    for j in ("garbage", "huge", "other", "argv", "mismatch"):
        res = c.wait("t", j, 30)
        assert res is not None and res.status == verdict_pb2.INVALID_JOB, (j, res)
        assert res.message
    # Redis answering errors: OOM on every write for a while
    rc.config_set("maxmemory", "1")
    c2 = Client(r.url)
    time.sleep(1.5)
    rc.config_set("maxmemory", "0")
    c.submit(trivial("after"))
    res = c2.wait("t", "after", 30)
    assert res is not None and res.status == verdict_pb2.OK
    assert d.alive()
    pending = rc.xpending(stream, keys.GROUP)["pending"]
    invalid = [e for e in d.events("job.done") if e["verdict"] == "INVALID_JOB"]
    print(f"\nFAULT malformed: invalid_results={len(invalid)} pending_left={pending} daemon_alive={d.alive()}")
    assert pending == 0
    assert len(invalid) >= 7
