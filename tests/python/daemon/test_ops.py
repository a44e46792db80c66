"""Operations of the queue and kjudged against real processes: retries and dead letters, cancel
(queued, running, by batch), deadlines, quotas through the CLI and the Python client, tenant ACL
users, /metrics /livez /readyz, admin drain with hand-back, SIGHUP reload, stream trimming, priority
lanes, cluster-wide caps, the systemd notify protocol.
"""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from kjudge import keys, turns
from kjudge.client import Client, QueueError, QueueFull
from kjudge.v1 import job_pb2, verdict_pb2

from test_fault import BIN, Daemon, RedisProc, client_for, daemons, trivial, workdir  # noqa: F401 (fixtures)


ALLOW_TEST_SWITCHES = "[testing]\nallow_trivial_switches = true\n"


def cli(url, *args, check=True):
    p = subprocess.run([str(BIN / "kjudge"), "--redis", url, *args], capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def wait_running(url, job_id, tenant="t", timeout=10):
    """Until `kjudge admin job` says a node runs it."""
    deadline = time.monotonic() + timeout
    while json.loads(cli(url, "admin", "--json", "job", job_id, "--tenant", tenant).stdout)["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_infra_errors_retry_with_backoff_then_dead_letter(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    daemons.append(Daemon(r.url, workdir, "n", extra="max_deliveries = 3\n" + ALLOW_TEST_SWITCHES))
    job = trivial("bad-infra")
    job.trivial.fail_infra = True
    c.submit(job)
    c.submit(trivial("fine"))
    res = c.wait("t", "bad-infra", 30)
    assert res.status == verdict_pb2.INFRA_ERROR and res.attempt == 3
    assert c.wait("t", "fine", 30).status == verdict_pb2.OK
    retries = daemons[0].events("job.retry")
    assert [e["deliveries"] for e in retries] == [1, 2]
    dead = json.loads(cli(r.url, "admin", "--json", "dead", "list", "--tenant", "t").stdout)
    assert [d["job_id"] for d in dead] == ["bad-infra"]
    assert "INFRA_ERROR on delivery 3" in dead[0]["reason"]
    # retry from the dead-letter stream: it runs again (and dead-letters again)
    cli(r.url, "admin", "dead", "retry", "--tenant", "t")
    deadline = time.monotonic() + 30
    while len(json.loads(cli(r.url, "admin", "--json", "dead", "list", "--tenant", "t").stdout)) != 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert "purged 1" in cli(r.url, "admin", "dead", "purge", "--tenant", "t").stdout
    candidate_failure = trivial("candidate-fails", argv=("/bin/false",))
    c.submit(candidate_failure)
    res = c.wait("t", "candidate-fails", 30)
    assert res.status == verdict_pb2.RUNTIME_ERROR and res.attempt == 1  # a result, never a retry


def test_cancel_queued_running_and_by_batch_and_deadlines(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    d = Daemon(r.url, workdir, "n", workers=1)
    daemons.append(d)
    c.submit(trivial("long", argv=("/bin/sleep", "10")))
    wait_running(r.url, "long")
    time.sleep(0.2)  # running now; everything below queues behind it
    c.submit_many([trivial(f"b{i}", batch="step1") for i in range(5)], batch_size=5)
    c.submit(trivial("queued"))
    past = trivial("late")
    past.deadline.FromSeconds(int(time.time()) - 10)
    c.submit(past)
    c.cancel("t", "queued")
    cli(r.url, "cancel", "--batch", "step1", "--tenant", "t")
    cancelled_at = time.monotonic()
    c.cancel("t", "long")
    got = c.wait_many("t", ["long", "queued", "late"] + [f"b{i}" for i in range(5)], 30)
    # the running sandbox was killed (cancel poll 100 ms), not left to sleep its 10 s
    assert time.monotonic() - cancelled_at < 5
    assert got["long"].status == verdict_pb2.CANCELLED and "while running" in got["long"].message
    assert got["queued"].status == verdict_pb2.CANCELLED and "before it started" in got["queued"].message
    assert got["late"].status == verdict_pb2.EXPIRED
    assert all(got[f"b{i}"].status == verdict_pb2.CANCELLED for i in range(5))
    assert c.wait_batch("t", "step1", 5)
    st = c.batch_status("t", "step1")
    assert st["submitted"] == st["completed"] == 5 and st["cancelled"] and st["verdicts"] == {"CANCELLED": 5}
    assert json.loads(cli(r.url, "batch", "step1", "--tenant", "t", "--json").stdout)["completed"] == 5
    job = json.loads(cli(r.url, "admin", "--json", "job", "late", "--tenant", "t").stdout)
    assert job["state"] == "done" and job["verdict"] == "EXPIRED"


def test_a_batch_tallies_the_repair_turns_of_the_jobs_that_named_their_group(workdir, daemons):
    """p1 solved at turn 0, p2 at turn 1, p3 never; a job without a group is not in the tally. The
    daemon's tally (Redis, read by the CLI and the client) agrees with kjudge.turns over the results."""
    r = RedisProc(workdir)
    c = client_for(r)
    daemons.append(Daemon(r.url, workdir, "n"))

    def attempt(job_id, group, turn, ok):
        job = trivial(job_id, batch="rl", argv=("/bin/true",) if ok else ("/bin/false",))
        job.client_meta["group"] = group
        job.turn.turn_index = turn
        return job

    jobs = [attempt("p1-0", "p1", 0, True), attempt("p2-0", "p2", 0, False), attempt("p2-1", "p2", 1, True),
            attempt("p3-0", "p3", 0, False), attempt("p3-1", "p3", 1, False), trivial("plain", batch="rl")]
    c.submit_many(jobs, batch_size=len(jobs))
    assert c.wait_batch("t", "rl", 60)
    got = c.wait_many("t", [j.job_id for j in jobs], 5)
    assert got["p2-1"].turn_index == 1 and got["p2-1"].client_meta["group"] == "p2"
    expected = {"groups": 3, "solved_first_turn": 1, "solved": 2, "last_turn": 1,
                "first_turn": pytest.approx(1 / 3), "best_of_turns": pytest.approx(2 / 3)}
    assert c.batch_status("t", "rl")["turns"] == expected
    assert json.loads(cli(r.url, "batch", "rl", "--tenant", "t", "--json").stdout)["turns"] == expected
    assert "turns: 3 groups, solved at turn 0: 1 (33.3%), by turn 1: 2 (66.7%)" in cli(r.url, "batch", "rl", "--tenant", "t").stdout
    rates = turns.turn_rates([got[j.job_id] for j in jobs if j.client_meta])
    assert (rates["first_turn"], rates["best_of_turns"]) == (expected["first_turn"], expected["best_of_turns"])


def test_priority_lanes_run_high_first_and_low_last(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    d = Daemon(r.url, workdir, "n", workers=1)
    daemons.append(d)
    c.submit(trivial("blocker", argv=("/bin/sleep", "1")))
    wait_running(r.url, "blocker")
    # queued behind the blocker, submitted lowest priority first
    c.submit(trivial("low", priority=-5))
    c.submit(trivial("normal"))
    c.submit(trivial("high", priority=3))
    cli(r.url, "submit", "--trivial", "--tenant", "t", "--job-id", "high-cli", "--priority", "1")
    got = c.wait_many("t", ["blocker", "low", "normal", "high", "high-cli"], 30)
    assert all(res.status == verdict_pb2.OK for res in got.values())
    # the log line follows the stored result: wait for all five
    deadline = time.monotonic() + 10
    while len(d.events("job.done")) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = [e["job_id"] for e in d.events("job.done")]
    assert started == ["blocker", "high", "high-cli", "normal", "low"]


def test_cluster_cap_limits_running_jobs_across_nodes(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    assert "cluster cap for t: 1" in cli(r.url, "admin", "cap", "t", "1").stdout
    daemons.append(Daemon(r.url, workdir, "n1", workers=2))
    daemons.append(Daemon(r.url, workdir, "n2", workers=2))
    ids = [f"capped{i}" for i in range(4)]
    c.submit_many([trivial(i, argv=("/bin/sleep", "0.4")) for i in ids])
    c.submit_many([trivial(f"free{i}", tenant="u", argv=("/bin/sleep", "0.4")) for i in range(4)])
    got = c.wait_many("t", ids, 60)
    free = c.wait_many("u", [f"free{i}" for i in range(4)], 60)
    assert all(res.status == verdict_pb2.OK for res in list(got.values()) + list(free.values()))

    def spans(results):
        return sorted((res.started_at.ToNanoseconds(), res.finished_at.ToNanoseconds(), res.worker) for res in results)

    capped = spans(got.values())
    # one at a time across both nodes: each starts after the previous one finished
    assert all(b[0] >= a[1] for a, b in zip(capped, capped[1:])), capped
    # the uncapped tenant ran side by side on the four slots
    unc = spans(free.values())
    assert any(b[0] < a[1] for a, b in zip(unc, unc[1:])), unc
    assert json.loads(cli(r.url, "admin", "--json", "queues").stdout)[0]["running_under_cap"] == 0


def test_quota_is_an_explicit_error_in_cli_and_client(workdir):
    r = RedisProc(workdir)
    c = client_for(r)
    cli(r.url, "admin", "quota", "t", "2")
    c.submit(trivial("q1"))
    c.submit(trivial("q2"))
    with pytest.raises(QueueFull, match="quota 2"):
        c.submit(trivial("q3"))
    with pytest.raises(QueueFull):
        c.submit_many([trivial("q4")])
    p = cli(r.url, "submit", "--trivial", "--tenant", "t", "--job-id", "q5", check=False)
    assert p.returncode == 4 and "queue full" in p.stderr
    cli(r.url, "admin", "quota", "t", "-1")
    c.submit(trivial("q3"))


def test_tenant_acl_users_submit_to_their_own_stream_and_read_only_their_results(workdir, daemons):
    r = RedisProc(workdir)
    client_for(r)
    line = cli(r.url, "admin", "acl", "team-a", "--password", "pa").stdout
    assert line.startswith("ACL SETUSER kj-team-a reset on >pa") and "%R~kj:{p0}:result:team-a:*" in line
    cli(r.url, "admin", "acl", "team-a", "--password", "pa", "--apply")
    cli(r.url, "admin", "acl", "team-b", "--password", "pb", "--apply")
    daemons.append(Daemon(r.url, workdir, "n"))
    sock = r.sock
    a = Client(f"redis://kj-team-a:pa@localhost/0")  # placeholder, replaced below (unix socket + auth)
    a._redis = redis.Redis(unix_socket_path=sock, username="kj-team-a", password="pa")
    b = Client(r.url)
    b._redis = redis.Redis(unix_socket_path=sock, username="kj-team-b", password="pb")
    a.submit(trivial("a1", tenant="team-a"))
    b.submit(trivial("b1", tenant="team-b"))
    assert a.wait("team-a", "a1", 30).status == verdict_pb2.OK
    assert b.wait("team-b", "b1", 30).status == verdict_pb2.OK
    with pytest.raises(QueueError, match="(?i)noperm|permission"):
        a.get_result("team-b", "b1")
    with pytest.raises(QueueError, match="(?i)noperm|permission"):
        a.submit(trivial("sneaky", tenant="team-b"))
    with pytest.raises(QueueError, match="(?i)noperm|permission"):
        a._call(a.redis.execute_command, "SET", keys.result(0, "team-a", "forged"), "x")
    with pytest.raises(QueueError, match="(?i)noperm|permission"):
        a._call(a.redis.execute_command, "DEL", keys.tenants(0))


def tenant_client(r, tenant, password):
    c = Client(r.url)
    c._redis = redis.Redis(unix_socket_path=r.sock, username="kj-" + tenant, password=password)
    return c


# Redis runs a function's commands under the caller's ACL: the tenant user holds only kj_submit's and
# kj_cancel's (command, key) pairs, so it cannot lower its queued counter, delete or overwrite its
# streams, or run the daemon's functions; and it is told that the default user is open.
def test_tenant_users_cannot_bypass_their_quota_or_run_daemon_functions(workdir):
    r = RedisProc(workdir)
    client_for(r)
    applied = cli(r.url, "admin", "acl", "team-a", "--password", "pa", "--apply")
    assert "default user is on without a password" in applied.stderr
    cli(r.url, "admin", "quota", "team-a", "2")
    a = tenant_client(r, "team-a", "pa")
    a.submit(trivial("a1", tenant="team-a"))
    a.cancel("team-a", "a1")
    rc = r.client()
    queued, stream = keys.queued(0, "team-a"), keys.jobs(0, "team-a")
    for cmd in (("SET", queued, "-100"), ("DECR", queued), ("INCRBY", queued, "-5"), ("DEL", queued),
                ("DEL", stream), ("SET", stream, "x"), ("XTRIM", stream, "MAXLEN", "0"), ("XDEL", stream, "0-1"),
                ("XGROUP", "DESTROY", stream, "kjudged"), ("SET", keys.job_marker(0, "team-b", "x"), "1"),
                ("HSET", keys.config(0), "max_job_bytes", "999999999"), ("HSET", keys.quotas(0), "team-a", "-1")):
        with pytest.raises(QueueError, match="(?i)noperm|permission"):
            a._call(a.redis.execute_command, *cmd)
    assert rc.get(queued) == b"1" and rc.xlen(stream) == 1
    a.submit(trivial("a2", tenant="team-a"))
    with pytest.raises(QueueFull):
        a.submit(trivial("a3", tenant="team-a"))
    # the daemon's functions refuse a tenant before their first write
    entry = rc.xrange(stream)[0][0].decode()
    complete = ("kj_complete", 3, keys.result(0, "team-a", "a1"), keys.done(0, "team-a"), stream, entry, "a1", "x", "OK", 60)
    with pytest.raises(QueueError, match="(?i)noperm|permission|not tenant users"):
        a._call(a.redis.fcall, *complete)
    with pytest.raises(QueueError, match="not tenant users"):
        a._call(a.redis.fcall, "kj_trim", 1, stream)
    assert rc.get(keys.result(0, "team-a", "a1")) is None and rc.xlen(stream) == 2


def test_kj_submit_refuses_payloads_over_the_nodes_max_job_bytes(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = r.client()
    big = trivial("big")
    big.client_meta["blob"] = "x" * (9 << 20)  # over the 8 MiB default before any daemon published its limit
    with pytest.raises(QueueError, match="over the 8388608 byte limit"):
        c.submit(big)
    daemons.append(Daemon(r.url, workdir, "n", extra="[limits]\nmax_job_bytes = 4096\n"))
    assert rc.hget(keys.config(0), "max_job_bytes") == b"4096"
    medium = trivial("medium")
    medium.client_meta["blob"] = "x" * 5000
    with pytest.raises(QueueError, match="over the 4096 byte limit"):
        c.submit(medium)
    assert rc.xlen(keys.jobs(0, "t")) == 0 and rc.get(keys.job_marker(0, "t", "medium")) is None
    c.submit(trivial("small"))
    assert c.wait("t", "small", 30).status == verdict_pb2.OK


# Dead letters keep at most 64 KiB of the job (a marker says it was cut); such a one cannot be retried.
def test_dead_letters_keep_a_bounded_part_of_the_payload(workdir):
    r = RedisProc(workdir)
    c = client_for(r)
    rc = r.client()
    c.submit(trivial("d1"))
    stream, dead = keys.jobs(0, "t"), keys.dead(0, "t")
    entry = rc.xrange(stream)[0][0].decode()
    payload = b"j" * (7 << 20)
    rc.fcall("kj_complete", 6, keys.result(0, "t", "d1"), keys.done(0, "t"), stream, keys.queued(0, "t"), "", dead,
             entry, "d1", b"result", "INFRA_ERROR", 60, "", "max deliveries", payload)
    (dead_id, fields), = rc.xrange(dead)
    assert len(fields[b"job"]) == 64 * 1024 and fields[b"truncated"] == b"1" and fields[b"job_bytes"] == str(7 << 20).encode()
    with pytest.raises(redis.ResponseError, match="submit it again"):
        rc.fcall("kj_dead_retry", 5, dead, stream, keys.result(0, "t", "d1"), keys.queued(0, "t"), "", dead_id)
    assert rc.xlen(dead) == 1 and rc.get(keys.result(0, "t", "d1")) == b"result"


# Finding 4 through a real daemon: test switches are off unless the node enables them, unknown enum
# values and capped fields are INVALID_JOB with a message.
def test_test_switches_unknown_enums_and_oversized_meta_are_invalid_jobs(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    daemons.append(Daemon(r.url, workdir, "n"))
    infra, skip, meta = trivial("infra"), trivial("skip"), trivial("meta")
    infra.trivial.fail_infra = True
    skip.trivial.skip_sandbox = True
    meta.client_meta["blob"] = "x" * (64 << 10)
    backend = job_pb2.Job(job_id="backend", tenant="t")
    backend.kernelbench.reference_py = "class Model: pass"
    backend.kernelbench.model_new_py = "class ModelNew: pass"
    backend.kernelbench.backend = 99
    strict = job_pb2.Job()
    strict.CopyFrom(backend)
    strict.job_id, strict.kernelbench.backend, strict.options.strictness = "strict", job_pb2.BACKEND_CPU, 99
    memory = trivial("memory")
    memory.limits.memory_bytes = 1
    c.submit_many([infra, skip, meta, backend, strict, memory])
    want = {"infra": "allow_trivial_switches", "skip": "allow_trivial_switches", "meta": "client_meta is",
            "backend": "kernelbench.backend = 99", "strict": "options.strictness = 99", "memory": "limits.memory_bytes"}
    for job_id, message in want.items():
        res = c.wait("t", job_id, 30)
        assert res.status == verdict_pb2.INVALID_JOB and message in res.message, (job_id, res.message)
        assert not res.client_meta
    # a node for the project's tests enables the switches
    daemons[0].proc.kill()
    daemons[0].proc.wait()
    daemons.append(Daemon(r.url, workdir, "m", extra=ALLOW_TEST_SWITCHES))
    c.submit(trivial("skip-allowed"))
    again = trivial("skip-allowed-2")
    again.trivial.skip_sandbox = True
    c.submit(again)
    assert c.wait("t", "skip-allowed-2", 30).status == verdict_pb2.OK


def test_metrics_health_drain_with_hand_back_reload_and_trim(workdir, daemons):
    r = RedisProc(workdir)
    c = client_for(r)
    port = free_port()
    one = Daemon(r.url, workdir, "one", workers=1, extra=f"[metrics]\nport = {port}\n[tenants.t]\nweight = 2\n")
    daemons.append(one)
    base = f"http://127.0.0.1:{port}"
    assert urllib.request.urlopen(base + "/livez").read() == b"ok\n"
    deadline = time.monotonic() + 10
    while True:
        try:
            if urllib.request.urlopen(base + "/readyz").status == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ids = [f"m{i}" for i in range(6)]
    c.submit_many([trivial(j, argv=("/bin/sleep", "0.5")) for j in ids])
    time.sleep(0.3)
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    for name in ("kjudge_queue_lag{tenant=\"t\"}", "kjudge_slots 1", "kjudge_slots_busy 1", "kjudge_stage_seconds_bucket",
                 "kjudge_dead_letters_total", "kjudge_redeliveries_total", "kjudge_leases_lost_total"):
        assert name in text, name
    # SIGHUP: re-read (log level, weights, caps) and keep going
    one.cfg.write_text(one.cfg.read_text().replace('weight = 2', 'weight = 5\nmax_running = 1'))
    one.proc.send_signal(signal.SIGHUP)
    # drain through Redis: it stops fetching, finishes its running job, exits 0; a second node
    # takes everything else
    cli(r.url, "admin", "drain", "one")
    assert one.proc.wait(timeout=30) == 0
    assert one.events("daemon.reloaded") and one.events("daemon.draining")
    two = Daemon(r.url, workdir, "two", workers=2)
    daemons.append(two)
    got = c.wait_many("t", ids, 30)
    assert all(v is not None and v.status == verdict_pb2.OK for v in got.values())
    assert {v.worker.split("/")[0] for v in got.values()} == {"one", "two"}
    nodes = json.loads(cli(r.url, "admin", "--json", "nodes").stdout)
    assert [n["node"] for n in nodes] == ["two"]
    # trimming by MINID: the stream shrinks to the last delivered entry once everything is acked
    deadline = time.monotonic() + 10
    while r.client().xlen(keys.jobs(0, "t")) > 1:
        assert time.monotonic() < deadline, r.client().xlen(keys.jobs(0, "t"))
        time.sleep(0.1)
    queues = json.loads(cli(r.url, "admin", "--json", "queues").stdout)
    assert queues[0]["tenant"] == "t" and queues[0]["waiting_for_result"] == 0 and queues[0]["pending"] == 0


def test_systemd_notify_protocol_ready_watchdog_stopping(workdir):
    """What systemd sees of kjudged (Type=notify, WatchdogSec): READY=1 once it fetches, WATCHDOG=1
    pings at half the watchdog interval while healthy, STOPPING=1 on SIGTERM, then a clean exit.
    The same sd_notify datagrams systemd reads, on a socket of our own (no systemd here)."""
    r = RedisProc(workdir)
    client_for(r)
    path = f"{workdir}/notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(10)
    cfg = Path(workdir) / "notify.toml"
    state = tempfile.mkdtemp(prefix="kjnotify-state.", dir="/tmp")
    os.chmod(state, 0o711)
    cfg.write_text(f'[daemon]\nnode = "notify"\nstate_dir = "{state}"\nworkers = 1\n')
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="400000")
    proc = subprocess.Popen([str(BIN / "kjudged"), "--config", str(cfg), "--redis", r.url], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        got = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum("WATCHDOG=1" in m for m in got) < 3:
            got.append(sock.recv(4096).decode())
        assert any("READY=1" in m for m in got), got
        assert sum("WATCHDOG=1" in m for m in got) >= 3, got  # 200 ms apart: 3 within ~1 s
        proc.send_signal(signal.SIGTERM)
        rest = []
        while not any("STOPPING=1" in m for m in rest):
            rest.append(sock.recv(4096).decode())
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()
        subprocess.run(["rm", "-rf", state])


def test_systemd_unit_verifies(tmp_path):
    """systemd's own parser accepts the shipped unit (every key known, ExecStart executable)."""
    analyze = "/usr/bin/systemd-analyze"
    if not os.path.exists(analyze):
        pytest.skip("systemd-analyze not installed")
    unit = Path(__file__).resolve().parents[3] / "systemd" / "kjudged.service"
    local = tmp_path / "kjudged.service"
    local.write_text(unit.read_text().replace("/usr/local/bin/kjudged", str(BIN / "kjudged")))
    p = subprocess.run([analyze, "verify", str(local)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "kjudged.service" not in p.stderr, p.stderr


def metrics_with(url, lines, seconds):
    """The node's /metrics once it has every line given (it may not be listening yet)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            text = urllib.request.urlopen(url).read().decode()
        except OSError:
            text = ""
        if all(line in text for line in lines):
            return text
        assert time.monotonic() < deadline, text[-2000:]
        time.sleep(0.05)


def test_one_daemon_over_several_gpus_spreads_jobs_and_reports_each(workdir, daemons):
    # no GPU on a CI machine: CPU jobs still go through placement, so the node's two GPU slots
    # both fill, and each GPU has its series and its running jobs in the heartbeat
    r = RedisProc(workdir)
    c = client_for(r)
    port = free_port()
    node = Daemon(r.url, workdir, "multi", workers=4,
                  extra=f"[metrics]\nport = {port}\n[sandbox]\ngpus = [3, 5]\n")
    daemons.append(node)
    ids = [f"g{i}" for i in range(4)]
    metrics = f"http://127.0.0.1:{port}/metrics"
    # both GPUs are reported before any job ran on them
    metrics_with(metrics, ['kjudge_gpu_quarantined{gpu="3"} 0', 'kjudge_gpu_quarantined{gpu="5"} 0'], 10)
    c.submit_many([trivial(j, argv=("/bin/sleep", "4")) for j in ids])
    # all four running: two on each GPU (the metrics are live)
    text = metrics_with(metrics, ['kjudge_gpu_running_jobs{gpu="3"} 2', 'kjudge_gpu_running_jobs{gpu="5"} 2'], 20)
    assert 'kjudge_gpu_quarantined{gpu="3"} 0' in text and 'kjudge_gpu_quarantined{gpu="5"} 0' in text
    deadline = time.monotonic() + 10
    while True:  # and the heartbeat says so at its next beat
        nodes = json.loads(cli(r.url, "admin", "--json", "nodes").stdout)
        info = nodes[0]["info"] if nodes else {}
        if info.get("gpu_jobs") == {"3": 2, "5": 2}:
            break
        assert time.monotonic() < deadline, info
        time.sleep(0.1)
    assert [g["gpu"] for g in info["gpus"]["gpus"]] == [3, 5]
    got = c.wait_many("t", ids, 30)
    assert all(v is not None and v.status == verdict_pb2.OK for v in got.values())
