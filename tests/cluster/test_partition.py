"""A judging node cut off from Redis by the network for longer than its lease, then let back:
the node runs in its own network namespace, joined to the host by a veth pair; the cluster
answers on an address of the host's loopback (10.254.x.1) that the namespace reaches through the
veth. Taking the veth down is the partition: the node keeps judging what it held, cannot renew its
leases nor file results; another node takes its jobs after the lease; when the link is back the
node files what it held, and its results are not the ones kept (first writer wins). Needs root
and `ip` (iproute2), as the sandbox tests do."""

import os
import random
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

import load
from cluster import Cluster
from kjudge.client import Client, completion_counts
from kjudge.v1 import verdict_pb2
from test_cluster import DIRECT, late_results


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def netns():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 (network namespaces)")
    n = random.randrange(1, 250)
    ns, host_if, ns_if = f"kjpart{n}", f"kjvh{n}", f"kjvn{n}"
    cluster_addr = f"10.254.{n}.1"
    ip("addr", "add", f"{cluster_addr}/32", "dev", "lo")
    try:
        ip("netns", "add", ns)
        ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        ip("link", "set", ns_if, "netns", ns)
        ip("addr", "add", f"10.253.{n}.1/30", "dev", host_if)
        ip("link", "set", host_if, "up")
        for cmd in (["addr", "add", f"10.253.{n}.2/30", "dev", ns_if], ["link", "set", ns_if, "up"],
                    ["link", "set", "lo", "up"], ["route", "add", "default", "via", f"10.253.{n}.1"]):
            ip("netns", "exec", ns, "ip", *cmd)
        yield {"ns": ns, "link": host_if, "addr": cluster_addr}
    finally:
        ip("netns", "del", ns, check=False)
        ip("link", "del", host_if, check=False)
        ip("addr", "del", f"{cluster_addr}/32", "dev", "lo", check=False)


def test_node_partitioned_past_its_lease_comes_back_without_a_second_verdict(netns):
    lease_s = 3
    d = tempfile.mkdtemp(prefix="kjcluster.", dir="/tmp")
    c = Cluster(d, nodes=3, lease_ms=lease_s * 1000, host=netns["addr"], netns={"node0": netns["ns"]})
    try:
        c.up()
        client = Client(c.url)
        ids = [f"p{i}" for i in range(8)]
        client.submit_many([load.trivial(j, DIRECT, ("/bin/sleep", "2")) for j in ids])
        rc = c.primary_client(redis)
        stream = f"kj:{{p0}}:jobs:{DIRECT}"
        deadline = time.monotonic() + 30
        while not rc.xpending_range(stream, "kjudged", "-", "+", 100, consumername="node0"):
            assert time.monotonic() < deadline, "node0 never took a job"
            time.sleep(0.05)
        held = [rc.xrange(stream, e["message_id"], e["message_id"])[0][1][b"id"].decode()
                for e in rc.xpending_range(stream, "kjudged", "-", "+", 100, consumername="node0")]
        t0 = time.monotonic()
        ip("link", "set", netns["link"], "down")  # the partition
        held_done = client.wait_many(DIRECT, held, timeout_s=lease_s + 10 + 20)
        took = time.monotonic() - t0  # its own jobs, finished by another node
        got = client.wait_many(DIRECT, ids, timeout_s=60)
        print(f"\nnode0 partitioned holding {held}: those done elsewhere after {took:.1f} s")
        assert all(r is not None for r in held_done.values())
        assert all(r is not None and r.status == verdict_pb2.OK for r in got.values())
        assert took <= lease_s + 10
        assert c.procs["node0"].alive()
        first = {j: r.SerializeToString() for j, r in got.items()}
        ip("link", "set", netns["link"], "up")
        deadline = time.monotonic() + 90  # its Redis calls time out (10 s) before it reconnects
        while len(late_results(c, "node0", held)) < len(held):
            assert time.monotonic() < deadline, c.procs["node0"].log.read_text()[-3000:]
            time.sleep(0.2)
        assert not any(e["stored"] for e in late_results(c, "node0", held))
        again = client.wait_many(DIRECT, ids, timeout_s=5)
        assert {j: r.SerializeToString() for j, r in again.items()} == first
        events = completion_counts(rc, DIRECT)
        assert all(n == 1 for n in events.values()) and len(events) == len(ids)
    finally:
        c.down()
        shutil.rmtree(d, ignore_errors=True)
