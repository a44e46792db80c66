"""The capacity plan's steps 1-3 with real processes (docs/capacity-plan.md): one real redis-server,
real kjudged judging and build nodes.

- The elected housekeeper: of two judging nodes one holds kj:{p0}:housekeeper; SIGKILLed, the other
  takes over within the lease, with a new fencing token, and does the shared work: a parked retry is
  promoted and a job left pending on a node that is gone is reaped (through kj:{p0}:reapable).
- Build requests with two build nodes and artifacts in the file store ([build] artifact_dir): each
  request goes to one build node (every build made once, spread over both), every request acked,
  Redis holds only markers, the judging node (local_max = 0, its own cache dir) takes every build
  from the files and every job gets its verdict.
- The job marker's TTL comes from kjudged's [queue] marker_ttl_s.
"""

import json
import shutil
import signal
import tempfile
import time
from pathlib import Path

import redis

from kjudge import keys
from kjudge.client import completion_counts
from kjudge.jobs import build_job
from kjudge.v1 import verdict_pb2

from test_build_nodes import SYNTAX_ERROR, TASKS, TORCH_ONLY, BuildNodeProc, node_config, wait_for
from test_fault import Daemon, RedisProc, client_for, daemons, trivial, workdir  # noqa: F401 (fixtures)

HK_LEASE_MS = 1500


def holder(rc):
    """(node, token) of the housekeeper lease, or None."""
    v = rc.get(keys.housekeeper(0))
    if not v:
        return None
    owner, token = v.decode().rsplit(" ", 1)
    return owner.split("/")[0], int(token)


def test_the_elected_housekeeper_fails_over_when_its_holder_dies(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = redis.Redis(unix_socket_path=r.sock)
    extra = f"housekeeper_lease_ms = {HK_LEASE_MS}\nmarker_ttl_s = 120\n"
    for name in ("h0", "h1"):
        daemons.append(Daemon(r.url, workdir, name, workers=2, lease_ms=2000, extra=extra))
    wait_for(lambda: holder(rc), 10, "no housekeeper elected")
    first, token = holder(rc)
    victim = next(d for d in daemons if d.node == first)
    survivor = next(d for d in daemons if d.node != first)
    assert victim.events("housekeeper.elected") and not survivor.events("housekeeper.elected")
    # marker TTL from [queue] marker_ttl_s, published by kjudged (kj:{p0}:config)
    c.submit(trivial("m1"))
    assert 0 < rc.ttl(keys.job_marker(0, "t", "m1")) <= 120
    assert c.wait_many("t", ["m1"], 30)["m1"] is not None

    t_kill = time.monotonic()
    victim.kill(signal.SIGKILL)
    wait_for(lambda: (holder(rc) or ("", 0))[0] == survivor.node, HK_LEASE_MS / 1000 + 3, "no failover")
    took = time.monotonic() - t_kill
    assert holder(rc)[1] == token + 1  # a new fencing token
    # its log line follows its election in Redis: on a loaded machine, a moment later
    wait_for(lambda: survivor.events("housekeeper.elected"), 10, "the survivor never logged its election")
    print(f"\nhousekeeper failover: {took:.2f} s after SIGKILL (lease {HK_LEASE_MS} ms)")
    assert took <= HK_LEASE_MS / 1000 + 1.5

    # the new holder's work: a retry parked as kj_retry parks it is promoted and judged ...
    job = trivial("parked")
    rc.hset(keys.retry(0, "t"), mapping={"parked": job.SerializeToString(), "parked|attempt": "1", "parked|batch": "",
                                         "parked|lane": "0"})
    rc.zadd(keys.delayed(0, "t"), {"parked": 1})
    # ... and a job a node that is gone took (pending on "ghost") is reaped once idle past the lease
    c.submit(trivial("orphan"))
    rc.xreadgroup(keys.GROUP, "ghost", {keys.jobs(0, "t"): ">"}, count=1)
    got = c.wait_many("t", ["parked", "orphan"], 30)
    assert all(v is not None for v in got.values()), survivor.log_tail()[-2000:]
    assert {v.worker.split("/")[0] for v in got.values()} == {survivor.node}
    assert verdict_pb2.Verdict.Name(got["orphan"].status) == "OK"
    assert set(completion_counts(rc, "t").values()) == {1}
    # the reaper's scan said where to look: one node wrote it, every node read it
    assert rc.hget("kj:{p0}:reapable", "~") is not None
    survivor.stop()
    assert rc.get(keys.housekeeper(0)) is None  # a node that stops hands it back at once


def candidates(n):
    """(task dir, candidate source, expected verdict) x n, all distinct and cheap to build."""
    relu = TASKS / "activation_relu"
    return [(relu, (TORCH_ONLY if i % 2 else SYNTAX_ERROR).format(i=i), "FALLBACK" if i % 2 else "COMPILE_ERROR")
            for i in range(n)]


def test_build_requests_go_to_one_of_two_build_nodes_and_artifacts_to_the_file_store(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = redis.Redis(unix_socket_path=r.sock)
    store = Path(tempfile.mkdtemp(prefix="kjartifacts.", dir="/tmp"))
    caches = [Path(tempfile.mkdtemp(prefix=f"kjcap-cache-{n}.", dir="/tmp")) for n in ("a", "b", "j")]
    for p in caches + [store]:
        p.chmod(0o755)
    art = f'artifact_dir = "{store}"\n'
    try:
        builders = [BuildNodeProc(r.url, workdir, f"builder-{n}", workers=2, extra=node_config(cache, art))
                    for n, cache in zip("ab", caches)]
        daemons.extend(builders)
        judge = Daemon(r.url, workdir, "judge", workers=2,
                       extra=node_config(caches[2], "shared = true\nlocal_max = 0\n" + art))
        daemons.append(judge)
        wait_for(lambda: rc.hget(keys.config(0), "build_requests") == b"1", 10, "build nodes did not announce")
        n = 12
        jobs, expected = [], {}
        for i, (task, src, verdict) in enumerate(candidates(n)):
            job = build_job((task / "reference.py").read_text(), candidate=src, backend="cpu", tenant="t",
                            job_id=f"kb-{i:02d}", trials=3)
            jobs.append(job)
            expected[job.job_id] = verdict
        c.submit_many(jobs)
        got = c.wait_many("t", list(expected), 300)
        missing = [j for j, res in got.items() if res is None]
        assert not missing, (missing, judge.log_tail()[-3000:])
        wrong = {j: verdict_pb2.Verdict.Name(res.status) for j, res in got.items()
                 if verdict_pb2.Verdict.Name(res.status) != expected[j]}
        assert not wrong, wrong

        built = {b.node: [e["job_id"] for e in b.events("build.done")] for b in builders}
        all_built = [j for ids in built.values() for j in ids]
        assert sorted(all_built) == sorted(expected), built  # each build once, by one build node
        assert all(built.values()), f"one build node got every request: {built}"
        assert not judge.events("kernelbench.build")  # the judging node compiled nothing itself
        assert len(judge.events("kernelbench.build_fetched")) == n
        for b in builders:  # no scan: the requests came through the group and were all acked
            assert not b.events("build.scan")
        for lane in (1, 0, -1):  # a build node acks its finished requests on its next turn, after publishing
            wait_for(lambda: rc.xpending(keys.build_requests(0, "t", lane), "kjbuild")["pending"] == 0, 10,
                     f"build requests of lane {lane} left pending")
        assert rc.xlen(keys.build_requests(0, "t", 0)) == n
        # only markers in Redis; the bytes are files named by their SHA-256
        markers = [rc.get(k) for k in rc.scan_iter(match="kj:{p0}:art:*")]
        assert len(markers) == n and all(m.startswith(b"kjref1 ") and len(m) < 100 for m in markers)
        files = [p for p in store.rglob("*") if p.is_file()]
        assert len(files) == n and not any(p.name.startswith(".tmp-") for p in files)
        for m in markers:
            _, digest, size = m.decode().split()
            assert (store / "sha256" / digest[:2] / digest).stat().st_size == int(size)
        print(f"\nbuild requests: {json.dumps({k: len(v) for k, v in built.items()})} of {n}; "
              f"{sum(p.stat().st_size for p in files)} artifact bytes in files, "
              f"{sum(len(m) for m in markers)} marker bytes in Redis")
    finally:
        for p in caches + [store]:
            shutil.rmtree(p, ignore_errors=True)
