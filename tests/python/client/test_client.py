"""kjudge.client against a real redis-server on a unix socket (no mocks).

Run: cd /work/main && PYTHONPATH=python /usr/bin/python3 -m pytest -q tests/python/client/test_client.py
(needs a build first: it generates python/kjudge/v1/*_pb2.py).
"""

import threading
import time

import pytest

from kjudge import keys
from kjudge.client import Client, QueueError
from kjudge.v1 import job_pb2, result_pb2, verdict_pb2


@pytest.fixture
def client(redis_url):
    c = Client(redis_url)
    assert c.load_functions() is True
    assert c.load_functions() is False  # already there: no reload
    return c


LANE = 1  # make_job's priority 3 puts every job in its tenant's high lane


def make_job(job_id, tenant="team-a"):
    job = job_pb2.Job(job_id=job_id, tenant=tenant, priority=3)
    job.client_meta["step"] = "7"
    job.kernelbench.SetInParent()
    return job


def complete(client, tenant, entry_id, job_id, result, partition=0):
    """What kjudged does when a job finishes (FCALL kj_complete, as libkjqueue calls it)."""
    return client.redis.fcall(
        "kj_complete", 3,
        keys.result(partition, tenant, job_id), keys.done(partition, tenant), keys.jobs(partition, tenant, LANE),
        entry_id, job_id, result.SerializeToString(), verdict_pb2.Verdict.Name(result.status), 3600)


def take(client, tenant, count=100, partition=0):
    """What kjudged's fetch does: XREADGROUP on the tenant's stream. [(entry_id, fields)]"""
    reply = client.redis.xreadgroup(keys.GROUP, "test-worker", {keys.jobs(partition, tenant, LANE): ">"}, count=count)
    return [(eid.decode(), fields) for _stream, entries in reply for eid, fields in entries]


def test_key_names_equal_the_cpp_ones():
    # the same literals as tests/queue/keys_test.cpp
    assert keys.tag(0) == "{p0}"
    assert keys.tenants(0) == "kj:{p0}:tenants"
    assert keys.tokens(0) == "kj:{p0}:tokens"
    assert keys.jobs(0, "team-a") == "kj:{p0}:jobs:team-a"
    assert keys.jobs(0, "team-a", 1) == "kj:{p0}:jobs:team-a:high"
    assert keys.jobs(0, "team-a", -1) == "kj:{p0}:jobs:team-a:low"
    assert [keys.lane_of_priority(p) for p in (5, 0, -2)] == [1, 0, -1]
    assert keys.job_marker(3, "team-a", "job-1") == "kj:{p3}:job:team-a:job-1"
    assert keys.result(0, "team-a", "job-1") == "kj:{p0}:result:team-a:job-1"
    assert keys.done(12, "t") == "kj:{p12}:done:t"
    assert keys.node(1, "gpu-01") == "kj:{p1}:node:gpu-01"
    assert keys.artifact(0, "ab12") == "kj:{p0}:art:ab12"
    assert keys.build_lease(2, "ab12") == "kj:{p2}:blease:ab12"
    assert keys.building(0, "team-a") == "kj:{p0}:building:team-a"
    assert keys.builders(0) == "kj:{p0}:builders"
    assert keys.GROUP == "kjudged"


def test_name_validation():
    assert keys.valid_tenant("team_a-01") and keys.valid_tenant("x" * 64)
    for bad in ("", "x" * 65, "Team", "a:b", "a{p1}", "a b", "caf\u00e9", None):
        assert not keys.valid_tenant(bad), bad
    assert keys.valid_job_id("Run.7:step_12-cand-0003") and keys.valid_job_id("J" * 128)
    for bad in ("", "J" * 129, "a/b", "a*", "{p1}", "#1-0", "x\n"):
        assert not keys.valid_job_id(bad), bad


def test_submit_duplicate_complete_get(client):
    job = make_job("job-1")
    entry_id, dup = client.submit(job)
    assert not dup
    assert client.submit(job) == (entry_id, True)
    assert client.redis.xlen("kj:{p0}:jobs:team-a:high") == 1
    assert client.redis.sismember("kj:{p0}:tenants", "team-a")
    assert 6 * 86400 < client.redis.ttl("kj:{p0}:job:team-a:job-1") <= 7 * 86400

    [(eid, fields)] = take(client, "team-a")
    assert eid == entry_id
    assert fields[b"id"] == b"job-1"
    assert job_pb2.Job.FromString(fields[b"job"]) == job
    assert client.get_result("team-a", "job-1") is None

    result = result_pb2.Result(job_id="job-1", tenant="team-a", status=verdict_pb2.OK, message="ok")
    assert complete(client, "team-a", eid, "job-1", result) == 1
    second = result_pb2.Result(job_id="job-1", tenant="team-a", status=verdict_pb2.INCORRECT)
    assert complete(client, "team-a", eid, "job-1", second) == 0  # first result wins
    assert client.get_result("team-a", "job-1") == result
    assert client.redis.xpending("kj:{p0}:jobs:team-a:high", keys.GROUP)["pending"] == 0
    [(_, event)] = client.redis.xrange("kj:{p0}:done:team-a")
    assert event == {b"id": b"job-1", b"status": b"OK"}


def test_wait_returns_result_completed_before_during_and_times_out(client):
    client.submit(make_job("early"))
    client.submit(make_job("late"))
    client.submit(make_job("other"))
    entries = {f[b"id"].decode(): eid for eid, f in take(client, "team-a")}
    ok = result_pb2.Result(job_id="early", status=verdict_pb2.OK)
    complete(client, "team-a", entries["early"], "early", ok)
    assert client.wait("team-a", "early", timeout_s=5) == ok

    late = result_pb2.Result(job_id="late", status=verdict_pb2.COMPILE_ERROR)

    def worker():
        time.sleep(0.2)
        complete(client, "team-a", entries["other"], "other", result_pb2.Result(job_id="other"))
        time.sleep(0.1)
        complete(client, "team-a", entries["late"], "late", late)

    t = threading.Thread(target=worker)
    start = time.monotonic()
    t.start()
    try:
        assert client.wait("team-a", "late", timeout_s=10) == late
    finally:
        t.join()
    assert 0.25 <= time.monotonic() - start < 5

    client.submit(make_job("never"))
    start = time.monotonic()
    assert client.wait("team-a", "never", timeout_s=0.3) is None
    assert 0.29 <= time.monotonic() - start < 3


def test_submit_many_and_wait_many(client):
    jobs = [make_job("b-%d" % i) for i in range(25)] + [make_job("b-3")]
    out = client.submit_many(jobs)
    assert len(out) == 26
    assert out[25] == (out[3][0], True)
    assert not any(dup for _, dup in out[:25])
    assert client.redis.xlen(keys.jobs(0, "team-a", LANE)) == 25

    def worker():
        time.sleep(0.1)
        for eid, fields in take(client, "team-a"):
            jid = fields[b"id"].decode()
            if jid != "b-24":  # one never finishes
                complete(client, "team-a", eid, jid, result_pb2.Result(job_id=jid, status=verdict_pb2.OK))

    t = threading.Thread(target=worker)
    t.start()
    try:
        got = client.wait_many("team-a", ["b-%d" % i for i in range(25)], timeout_s=1.0)
    finally:
        t.join()
    assert got["b-24"] is None
    assert all(got["b-%d" % i].job_id == "b-%d" % i for i in range(24))


def test_partition_tags_every_key(client):
    entry_id, _ = client.submit(make_job("job-1"), partition=2)
    assert client.redis.exists("kj:{p2}:jobs:team-a:high", "kj:{p2}:job:team-a:job-1", "kj:{p2}:tenants") == 3
    [(eid, _)] = take(client, "team-a", partition=2)
    complete(client, "team-a", eid, "job-1", result_pb2.Result(job_id="job-1"), partition=2)
    assert client.get_result("team-a", "job-1", partition=2).job_id == "job-1"
    assert client.get_result("team-a", "job-1") is None


def test_invalid_names_are_rejected_before_redis(client):
    with pytest.raises(QueueError, match="invalid tenant"):
        client.submit(make_job("job-1", tenant="Team A"))
    with pytest.raises(QueueError, match="invalid job id"):
        client.submit(make_job("job/1"))
    with pytest.raises(QueueError, match="invalid job id"):
        client.submit_many([make_job("ok-1"), make_job("")])
    with pytest.raises(QueueError):
        client.get_result("team-a", "a*")
    with pytest.raises(QueueError, match="kjudge.v1.job_pb2.Job"):
        client.submit(b"bytes")
    assert client.redis.dbsize() == 0  # submit_many sent nothing either


def test_missing_functions_give_a_clear_error(redis_url):
    c = Client(redis_url)
    assert not c.functions_loaded()
    with pytest.raises(QueueError, match="load_functions"):
        c.submit(make_job("job-1"))
    assert c.load_functions()
    assert c.submit(make_job("job-1"))[1] is False


def test_bad_urls():
    with pytest.raises(QueueError, match="unsupported scheme"):
        Client("http://localhost:6379")
    c = Client("unix:///nonexistent-kjudge-dir/redis.sock")
    with pytest.raises(QueueError, match="nonexistent-kjudge-dir"):
        c.get_result("team-a", "job-1")
