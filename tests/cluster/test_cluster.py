"""The cluster under failure, with real processes (deploy/cluster): kill the Redis primary under
load (direct clients and gateways), lose a judging node (SIGKILL) or freeze it past its lease
(SIGSTOP: a node cut off from Redis that comes back), restart a gateway, restart every judging
node in turn, let replicas lag. Every test asserts what an operator was promised
(docs/operator-guide.md, "High availability"): no acknowledged job lost, no result changed after a
client read it, one result per job. bench/cluster/failover.py is the long version (20 failovers).
"""

import json
import signal
import time

import redis

import load
from kjudge.client import Client, QueueError, completion_counts
from kjudge.v1 import result_pb2, verdict_pb2

DIRECT, VIA_GATEWAY = "direct", "demo"


def start_load(c, rate, tenants=(DIRECT, VIA_GATEWAY), argv=("/bin/true",)):
    ledger = load.Ledger()
    threads = []
    if DIRECT in tenants:
        threads.append(load.Submitter(ledger, DIRECT, rate, "d", load.direct_submit(c.url), argv))
    if VIA_GATEWAY in tenants:
        gws = [c.gateway_url(i) for i in range(len(c.gateway_ports))]
        threads.append(load.Submitter(ledger, VIA_GATEWAY, rate, "g", load.gateway_submit(gws, c.tokens[VIA_GATEWAY]), argv))
    threads.append(load.Reader(ledger, c.url, list(tenants)))
    for t in threads:
        t.start()
    return ledger, threads


def stop_load(threads):
    for t in threads:
        t.stop_flag.set()
    for t in threads:
        t.join(timeout=120)


def assert_promises(report, ledger):
    print(f"\nCLUSTER acked={report['acked']} read={len(ledger.read)} lost={len(report['lost'])} "
          f"changed_after_read={len(report['changed_after_read'])} duplicates={len(report['duplicates'])} "
          f"failed_submissions={ledger.failed} retried={ledger.retried} verdicts={report['verdicts']}")
    assert report["acked"] > 0
    assert not report["lost"], report["lost"][:10]
    assert not report["changed_after_read"], report["changed_after_read"][:10]
    assert not report["duplicates"], report["duplicates"][:10]
    assert ledger.failed == 0


def functions_everywhere(c):
    """The kjudge function library on the primary and on every replica (it replicates)."""
    for port in c.redis_ports:
        libs = redis.Redis(host="127.0.0.1", port=port).execute_command("FUNCTION", "LIST", "LIBRARYNAME", "kjudge")
        assert libs, f"no kjudge functions on 127.0.0.1:{port}"


def test_primary_killed_twice_under_load_nothing_acknowledged_lost(cluster_factory):
    c = cluster_factory(nodes=2)
    functions_everywhere(c)
    ledger, threads = start_load(c, rate=8)
    kills = []
    for _ in range(2):
        time.sleep(4)
        killed_at, named, back = c.kill_primary()
        kills.append(killed_at)
        print(f"failover: new primary named after {named:.1f} s, replicas in sync after {back:.1f} s")
    time.sleep(4)
    stop_load(threads)
    report = load.check(ledger, c.url, [DIRECT, VIA_GATEWAY])
    assert_promises(report, ledger)
    functions_everywhere(c)
    gaps = load.gaps(load.stored_at(c.primary_client(redis), [DIRECT, VIA_GATEWAY]), kills)
    print(f"service gaps: {[round(g, 1) for g in gaps]} s")
    assert len(gaps) == 2 and max(gaps) <= 10
    assert report["verdicts"] == {"OK": report["acked"]}


def test_demoted_primary_is_never_written(cluster_factory):
    """A client connected to the primary when it is demoted (SENTINEL FAILOVER: it stays up as a
    replica) reconnects to the new primary; nothing is written to the old one."""
    c = cluster_factory(nodes=1)
    client = Client(c.url)
    old = c.primary_port()
    client.submit(load.trivial("before", DIRECT))
    assert client.wait(DIRECT, "before", timeout_s=60).status == verdict_pb2.OK
    assert redis.Redis(host="127.0.0.1", port=c.sentinel_ports[0]).execute_command("SENTINEL", "FAILOVER", "kjudge")
    deadline = time.monotonic() + 30
    while c.primary_port() in (None, old):
        assert time.monotonic() < deadline, "no failover"
        time.sleep(0.1)
    while redis.Redis(host="127.0.0.1", port=old).execute_command("ROLE")[0] != b"slave":
        assert time.monotonic() < deadline, "the old primary was not demoted"
        time.sleep(0.1)
    # the client's pooled connection went to the old primary: it follows, writes on the new one
    assert client.submit(load.trivial("after", DIRECT))[1] is False
    assert client.wait(DIRECT, "after", timeout_s=60).status == verdict_pb2.OK
    # the judging node followed too, and a result staged before the failover is the one filed
    staged = result_pb2.Result(job_id="staged", tenant=DIRECT, status=verdict_pb2.INCORRECT, message="staged first")
    raw = staged.SerializeToString()
    fields = [b"INCORRECT", b"", b"", b"0", raw]
    encoded = b"kjstage1:" + b"".join(str(len(f)).encode() + b":" + f for f in fields)
    c.primary_client(redis).set(f"kj:{{p0}}:staged:{DIRECT}:staged", encoded)
    client.submit(load.trivial("staged", DIRECT))
    got = client.wait(DIRECT, "staged", timeout_s=60)
    assert got.SerializeToString() == raw


def test_judging_node_killed_or_frozen_its_jobs_finish_elsewhere(cluster_factory):
    lease_s = 3
    c = cluster_factory(nodes=3, lease_ms=lease_s * 1000)
    client = Client(c.url)
    for victim, sig in (("node0", signal.SIGKILL), ("node1", signal.SIGSTOP)):
        ids = [f"{victim}-{i}" for i in range(8)]
        client.submit_many([load.trivial(j, DIRECT, ("/bin/sleep", "1.5")) for j in ids])
        rc = c.primary_client(redis)
        deadline = time.monotonic() + 30
        while not rc.xpending_range(f"kj:{{p0}}:jobs:{DIRECT}", "kjudged", "-", "+", 100, consumername=victim):
            assert time.monotonic() < deadline, f"{victim} never took a job"
            time.sleep(0.05)
        stream = f"kj:{{p0}}:jobs:{DIRECT}"
        held = [rc.xrange(stream, e["message_id"], e["message_id"])[0][1][b"id"].decode()
                for e in rc.xpending_range(stream, "kjudged", "-", "+", 100, consumername=victim)]
        t0 = time.monotonic()
        c.procs[victim].signal(sig)
        held_done = client.wait_many(DIRECT, held, timeout_s=lease_s + 10 + 20)
        took = time.monotonic() - t0  # the victim's own jobs, finished by another node
        got = client.wait_many(DIRECT, ids, timeout_s=60)
        missing = [j for j, r in {**got, **held_done}.items() if r is None]
        verdicts = {verdict_pb2.Verdict.Name(r.status) for r in got.values() if r is not None}
        print(f"\n{victim} {signal.Signals(sig).name} holding {held}: those done elsewhere after {took:.1f} s, "
              f"verdicts={verdicts}")
        assert not missing and verdicts == {"OK"}
        assert took <= lease_s + 10
        if sig == signal.SIGSTOP:
            # it comes back past its lease, finishes what it held: the results stay the ones read
            first = {j: r.SerializeToString() for j, r in got.items()}
            c.procs[victim].signal(signal.SIGCONT)
            deadline = time.monotonic() + 30
            while len(late_results(c, victim, held)) < len(held):  # it did try to file what it held
                assert time.monotonic() < deadline, c.procs[victim].log.read_text()[-3000:]
                time.sleep(0.2)
            assert not any(e["stored"] for e in late_results(c, victim, held))
            again = client.wait_many(DIRECT, ids, timeout_s=5)
            assert {j: r.SerializeToString() for j, r in again.items()} == first
    events = completion_counts(c.primary_client(redis), DIRECT)
    assert all(n == 1 for n in events.values()) and len(events) == 16


def late_results(c, node, job_ids):
    """The node's job.done log events for the jobs it held when it was frozen (stored: whether
    its result was the one filed)."""
    events = [json.loads(line) for line in c.procs[node].log.read_text().splitlines()
              if line.startswith("{") and '"job.done"' in line]
    return [e for e in events if e.get("job_id") in job_ids]


def test_gateway_restart_and_rolling_restart_of_nodes_with_work_flowing(cluster_factory):
    c = cluster_factory(nodes=3)
    ledger, threads = start_load(c, rate=8)
    time.sleep(3)
    for gw in ("gateway0", "gateway1"):  # one at a time, as behind a load balancer
        c.restart(gw)
        time.sleep(1)
    for name in c.node_names():  # drain (SIGTERM hands its entries back), restart, rejoin
        time.sleep(2)
        c.restart(name)
    time.sleep(3)
    stop_load(threads)
    report = load.check(ledger, c.url, [DIRECT, VIA_GATEWAY])
    assert_promises(report, ledger)
    assert report["verdicts"] == {"OK": report["acked"]}


def test_lagging_replicas_delay_acknowledgements_never_lose_them(cluster_factory):
    c = cluster_factory(nodes=1)
    primary = c.primary_name()
    replicas = [n for n in ("redis0", "redis1", "redis2") if n != primary]
    ledger, threads = start_load(c, rate=5, tenants=(DIRECT,))
    time.sleep(2)
    c.procs[replicas[0]].signal(signal.SIGSTOP)  # one replica lags: the other acknowledges
    time.sleep(3)
    acked_one_lagging = len(ledger.acked)
    # both lag: no submission may be acknowledged (nothing holds a copy)
    c.procs[replicas[1]].signal(signal.SIGSTOP)
    impatient = Client(c.url, failover_wait_s=1)
    t0 = time.monotonic()
    try:
        impatient.submit(load.trivial("unreplicated", DIRECT))
        acknowledged = True
    except QueueError as e:
        acknowledged = False
        print(f"\nwith no replica: refused after {time.monotonic() - t0:.1f} s: {e}")
    for r in replicas:
        c.procs[r].signal(signal.SIGCONT)
    time.sleep(3)
    stop_load(threads)
    report = load.check(ledger, c.url, [DIRECT])
    assert_promises(report, ledger)
    assert not acknowledged
    assert acked_one_lagging > 10
