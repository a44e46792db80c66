"""Builds as their own stage (docs/operator-guide.md, *Build nodes*): two real kjudged processes on
one real redis-server, one `--role build` (no judging) and one judging node that shares builds
through Redis and leaves them to build nodes while one is alive ([build] local_max = 0). A batch of
20 distinct KernelBench-format candidates on the cpu backend is built by the build node and judged
by the other; the build node is SIGKILLed mid-batch while it holds build leases: they expire, the
judging node builds what was left (no build node alive), then a restarted build node takes over
again. Every job gets its expected verdict, exactly once. Also: tenant users cannot read or write
the store's keys.

Each node has its own cache dir, so every artifact the judging node uses came through Redis.
"""

import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis

from kjudge import keys
from kjudge.client import completion_counts
from kjudge.jobs import build_job
from kjudge.v1 import verdict_pb2

from eval_workspace import shared_pch
from test_ops import free_port
from test_fault import BIN, Daemon, RedisProc, client_for, daemons, workdir  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "tests/kernelbench/tasks"
N = 20

# Three honest candidates with a real load_inline C++ extension (its binary goes through Redis; a
# cold build costs ~10 CPU-s here with the suite's precompiled header), and between them cheap
# distinct ones whose build stage decides them: torch-only candidates (the static policy's
# FALLBACK, no kernel for the backend) and syntax errors (COMPILE_ERROR), each made distinct by its
# variant number.
REAL = ["activation_relu", "elementwise_add", "reduction_argmax_dim"]
TORCH_ONLY = """import torch
import torch.nn as nn
# variant {i}
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
SYNTAX_ERROR = """import torch.nn as nn
# variant {i}
class ModelNew(nn.Module):
    def forward(self, x) return x
"""


def candidates():
    """(task dir, candidate source, expected verdict) x N, all distinct: real builds at 5, 11, 17."""
    out, real = [], iter(REAL)
    for i in range(N):
        if i % 6 == 5:
            task = TASKS / next(real)
            out.append((task, (task / "cpu_ok.py").read_text(), "OK"))
        elif i % 2:
            out.append((TASKS / "activation_relu", SYNTAX_ERROR.format(i=i), "COMPILE_ERROR"))
        else:
            out.append((TASKS / "activation_relu", TORCH_ONLY.format(i=i), "FALLBACK"))
    return out


def node_config(cache, extra):
    """A node's config on its cache dir; with the suite's precompiled header if shared_pch gave it one."""
    return f"""
[kernelbench]
cache_dir = "{cache}"
harness_dir = "{ROOT / 'python'}"
precompiled_header = {str((cache / "torch-pch").is_dir()).lower()}
[build]
lease_ms = 2000
builder_ttl_ms = 2000
{extra}
"""


class BuildNodeProc(Daemon):
    """The test_fault node (config, log, kill, restart under the same name) as `kjudged --role build`."""

    def start(self, wait=True):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([str(BIN / "kjudged"), "--role", "build", "--config", str(self.cfg),
                                      "--redis", self.redis_url], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.starts += 1
        if wait:
            self.wait_started()


def build_node(r, workdir, cache, workers=2, metrics_port=None):
    metrics = f"[metrics]\nport = {metrics_port}\n" if metrics_port else ""
    return BuildNodeProc(r.url, workdir, "builder", workers=workers, extra=node_config(cache, "") + metrics)


def scrape(port, path="/metrics"):
    """(status, body) of the node's HTTP endpoint."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def builder_leases(rc):
    """Content keys whose build lease the build node holds now."""
    out = []
    for k in rc.scan_iter(match="kj:{p0}:blease:*"):
        owner = rc.get(k)
        if owner and owner.startswith(b"builder/"):
            out.append(k.decode().rsplit(":", 1)[1])
    return out


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_build_node_builds_judging_node_judges_and_a_killed_builder_loses_nothing(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = redis.Redis(unix_socket_path=r.sock)
    caches = [Path(tempfile.mkdtemp(prefix=f"kjbuild-cache-{n}.", dir="/tmp")) for n in ("b", "j")]
    for p in caches:
        p.chmod(0o755)
        shared_pch(p)  # its builds still go through Redis: the header is no artifact
    try:
        builder_port = free_port()
        builder = build_node(r, workdir, caches[0], metrics_port=builder_port)
        daemons.append(builder)
        port = free_port()
        judge = Daemon(r.url, workdir, "judge", workers=2,
                       extra=node_config(caches[1], "shared = true\nlocal_max = 0") + f"[metrics]\nport = {port}\n")
        daemons.append(judge)
        jobs, expected = [], {}
        for i, (task, src, verdict) in enumerate(candidates()):
            job = build_job((task / "reference.py").read_text(), candidate=src, backend="cpu", tenant="t", job_id=f"kb-{i:02d}", batch_id="step",
                            trials=3)
            jobs.append(job)
            expected[job.job_id] = verdict
        t0 = time.monotonic()
        c.submit_many(jobs, batch_size=N)

        # mid-batch: the build node has published some builds and holds leases on others (frozen
        # with SIGSTOP while it holds one, so the kill cannot fall between two builds)
        while True:
            wait_for(lambda: len(builder.events("build.done")) >= 4 and builder_leases(rc), 240,
                     "the build node published nothing: " + builder.log_tail()[-3000:])
            builder.proc.send_signal(signal.SIGSTOP)
            if builder_leases(rc):
                break
            builder.proc.send_signal(signal.SIGCONT)
        local_before_kill = len(judge.events("kernelbench.build"))
        dead = f"builder/{builder.proc.pid}/".encode()
        builder.kill(signal.SIGKILL)
        built_before_kill = len(builder.events("build.done"))
        # a SIGKILLed builder releases nothing: its leases stay until they expire (lease_ms = 2000)
        lease_keys = [keys.build_lease(0, k) for k in builder_leases(rc)]
        assert any((rc.get(k) or b"").startswith(dead) for k in lease_keys)
        wait_for(lambda: not any((rc.get(k) or b"").startswith(dead) for k in lease_keys), 10,
                 "a dead builder's lease never expired")

        # no build node is alive: the judging node builds what is left itself
        wait_for(lambda: judge.events("kernelbench.build"), 120,
                 "the judging node never took over: " + judge.log_tail()[-3000:])

        # a restarted build node takes over again
        builder.start()
        got = c.wait_many("t", list(expected), 300)
        elapsed = time.monotonic() - t0

        missing = [j for j, res in got.items() if res is None]
        assert not missing, (missing, judge.log_tail()[-3000:])
        wrong = {j: (verdict_pb2.Verdict.Name(res.status), res.message) for j, res in got.items()
                 if verdict_pb2.Verdict.Name(res.status) != expected[j]}
        assert not wrong, wrong
        assert set(completion_counts(rc, "t").values()) == {1}  # exactly one result each
        assert len(completion_counts(rc, "t")) == N

        fetched = judge.events("kernelbench.build_fetched")
        local = judge.events("kernelbench.build")
        assert built_before_kill >= 4
        assert len(fetched) >= 4 and all(e["builder"] == "builder" for e in fetched)
        assert local, "the judging node built nothing after the kill"
        # each job's build came from exactly one place: a build node (fetched) or the judging node
        assert len(fetched) + len(local) == N
        # the judging node compiled only while no build node was alive: never before the kill
        assert local_before_kill == 0
        phases = [dict(res.phase_seconds) for res in got.values()]
        assert sum(1 for p in phases if p.get("build.shared_fetched") == 1) == len(fetched)
        assert not rc.keys("kj:{p0}:blease:*")  # every lease released at the end
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        counters = dict(line.split() for line in metrics.splitlines() if line.startswith("kjudge_builds_"))
        assert int(counters["kjudge_builds_fetched_total"]) == len(fetched)
        assert int(counters["kjudge_builds_leased_total"]) == int(counters["kjudge_builds_published_total"]) == len(local)
        assert counters["kjudge_builds_rejected_total"] == "0"
        # the build node's own endpoint, after its restart: what it built since, and its store counters
        assert scrape(builder_port, "/livez")[0] == 200 and scrape(builder_port, "/readyz") == (200, "ready\n")
        status, text = scrape(builder_port)
        bm = dict(line.split() for line in text.splitlines() if line.startswith("kjudge_"))
        assert status == 200 and bm["kjudge_ready"] == "1" and bm["kjudge_build_slots"] == "2", text
        assert int(bm["kjudge_builds_done_total"]) == len(builder.events("build.done")) - built_before_kill
        assert int(bm["kjudge_builds_leased_total"]) >= int(bm["kjudge_builds_done_total"])  # each under a lease
        assert bm["kjudge_builds_running"] == "0"
        print(f"two-node batch of {N}: {elapsed:.1f} s; builder built {built_before_kill} before the kill "
              f"(+{len(builder.events('build.done')) - built_before_kill} after its restart), "
              f"judging node fetched {len(fetched)}, built {len(local)} itself")
        builder.stop()
        judge.stop()
    finally:
        for p in caches:
            shutil.rmtree(p, ignore_errors=True)


def test_tenant_users_cannot_touch_the_build_store(workdir):
    r = RedisProc(workdir)
    client_for(r)  # loads the functions
    rc = redis.Redis(unix_socket_path=r.sock)
    p = subprocess.run([str(BIN / "kjudge"), "--redis", r.url, "admin", "acl", "t", "--password", "pw", "--apply"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rc.set("kj:{p0}:art:" + "a" * 64, b"kjart1\n...")
    tenant = redis.Redis(unix_socket_path=r.sock, username="kj-t", password="pw")
    assert tenant.ping()
    for attempt in (lambda: tenant.get("kj:{p0}:art:" + "a" * 64),
                    lambda: tenant.set("kj:{p0}:art:" + "b" * 64, b"forged"),
                    lambda: tenant.set("kj:{p0}:blease:" + "b" * 64, b"me"),
                    lambda: tenant.fcall("kj_build_lease", 3, "kj:{p0}:blease:" + "b" * 64, "kj:{p0}:building:t",
                                         "kj:{p0}:caps", "acquire", "me", "1000", "t"),
                    lambda: tenant.zadd("kj:{p0}:builders", {"fake": 1e15})):
        with pytest.raises(redis.exceptions.ResponseError):
            attempt()
    assert not rc.exists("kj:{p0}:art:" + "b" * 64, "kj:{p0}:blease:" + "b" * 64)


def test_build_node_honours_cancel_deadline_and_priority(workdir, daemons):
    """A build node alone (one slot): a cancelled job's running build is killed and nothing is
    published; a job past its deadline is never built; waiting builds go high, normal, low lane."""
    r = RedisProc(workdir)
    c = client_for(r)
    rc = redis.Redis(unix_socket_path=r.sock)
    cache = Path(tempfile.mkdtemp(prefix="kjbuild-cache-b.", dir="/tmp"))
    cache.chmod(0o755)
    try:
        builder = build_node(r, workdir, cache, workers=1)
        daemons.append(builder)
        relu = TASKS / "activation_relu"
        ref = (relu / "reference.py").read_text()

        def job(job_id, src, **kw):
            return build_job(ref, candidate=src, backend="cpu", tenant="t", job_id=job_id, **kw)

        c.submit(job("slow", (relu / "cpu_ok.py").read_text()))  # a real C++ build: seconds
        wait_for(lambda: any(e["job_id"] == "slow" for e in builder.events("kernelbench.build")), 60,
                 "the build node did not start: " + builder.log_tail()[-2000:])
        late = job("late", TORCH_ONLY.format(i="late"))
        late.deadline.FromSeconds(int(time.time()) - 5)
        c.submit(late)
        c.submit(job("low", TORCH_ONLY.format(i="low"), priority=-1))
        c.submit(job("normal", TORCH_ONLY.format(i="normal")))
        c.submit(job("high", TORCH_ONLY.format(i="high"), priority=1))
        cancelled_at = time.monotonic()
        c.cancel("t", "slow")
        wait_for(lambda: any(e["job_id"] == "slow" for e in builder.events("build.done")), 30, "no cancel")
        assert time.monotonic() - cancelled_at < 10  # its sandbox was killed, not left to finish
        slow = [e for e in builder.events("build.done") if e["job_id"] == "slow"][0]
        assert slow["verdict"] == "CANCELLED"
        assert not rc.exists(keys.artifact(0, slow["key"]), keys.build_lease(0, slow["key"]))

        wait_for(lambda: len(builder.events("build.done")) >= 4, 60, builder.log_tail()[-2000:])
        time.sleep(1)  # a build of "late" would have started by now
        done = [e["job_id"] for e in builder.events("build.done")]
        assert done == ["slow", "high", "normal", "low"], done
        assert len(rc.keys("kj:{p0}:art:*")) == 3
        assert rc.zscore(keys.builders(0), "builder")
        # kjudge admin drain: it drains, exits 0 and is no longer counted as a live build node
        p = subprocess.run([str(BIN / "kjudge"), "--redis", r.url, "admin", "drain", "builder"], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert builder.proc.wait(timeout=30) == 0
        assert builder.events("daemon.stopped")
        assert not rc.zscore(keys.builders(0), "builder")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
