"""kjudge-gateway against a real redis-server (and a real kjudged where a verdict is asserted):
tokens, tenant isolation, quota / rate / size refusals, bad JSON and protobuf (4xx, nothing
written), a flood from one tenant beside another tenant's judged jobs with Redis memory bounded,
and 1,000 submissions with none lost across a gateway restart.

Needs a build (scripts/test does it); KJUDGE_BUILD_DIR names it (default: build-test).
"""

import http.client
import json
import os
import re
import signal
import select
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from kjudge import keys
from kjudge.client import QueueError, QueueFull
from kjudge.gateway_client import GatewayClient, GatewayError
from kjudge.v1 import gateway_pb2, job_pb2, result_pb2, verdict_pb2

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KJUDGE_BUILD_DIR", ROOT / "build-test"))
BIN = BUILD / "bin"
SMALL_CONFIG = """
[gateway]
max_request_bytes = 65536
token_refresh_ms = 100
queued_refresh_ms = 50
max_job_bytes = 8192
[gateway.tenants.tiny]
max_queued = 5
[gateway.tenants.slow]
rate_per_s = 0.01
burst = 3
[gateway.tenants.flood]
max_queued = 40
max_job_bytes = 4096
"""


def admin(redis_url, *args):
    p = subprocess.run([str(BIN / "kjudge"), "--redis", redis_url, "admin", *args], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    """A kjudge-gateway process on a fixed port (so a restart keeps its URL)."""

    def __init__(self, redis_url, tmp_path, config=SMALL_CONFIG):
        assert (BIN / "kjudge-gateway").exists(), f"no build in {BUILD}: run scripts/test"
        self.redis_url, self.port = redis_url, free_port()
        self.config = tmp_path / "gateway.toml"
        self.config.write_text(config)
        self.log_path = tmp_path / "gateway.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self):
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([str(BIN / "kjudge-gateway"), "-c", str(self.config), "--redis", self.redis_url,
                                      "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not self._listening():
            assert self.proc.poll() is None, self.log_path.read_text()
            assert time.monotonic() < deadline, "kjudge-gateway did not come up"
            time.sleep(0.02)

    def _listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.log.close()
        return rc

    def request(self, method, path, body=None, token=None, content_type="application/json", accept=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Content-Type": content_type}
        if token:
            headers["Authorization"] = "Bearer " + token
        if accept:
            headers["Accept"] = accept
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    def metrics(self):
        return self.request("GET", "/metrics")[1].decode()


@pytest.fixture
def gateway(redis_url, tmp_path):
    yield from serving(Gateway(redis_url, tmp_path))


def serving(gw):
    """A fixture's gateway, then its clean stop (unless the test stopped it)."""
    yield gw
    if gw.proc.poll() is None:
        assert gw.stop() == 0, gw.log_path.read_text()


def trivial(job_id, tenant="", **fields):
    job = job_pb2.Job(job_id=job_id, tenant=tenant, **fields)
    job.trivial.argv.append("/bin/true")
    return job


def as_json(job):
    from google.protobuf import json_format
    return json_format.MessageToJson(job)


def error_code(data):
    return json.loads(data)["error"]["code"]


def refusals(metrics_text, reason, tenant):
    m = re.search(r'kjudge_gateway_refusals_total\{reason="%s",tenant="%s"\} (\d+)' % (reason, tenant), metrics_text)
    return int(m.group(1)) if m else 0


def stream_length(redis_url, tenant):
    r = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    return r.xlen(keys.jobs(0, tenant)) if r.exists(keys.jobs(0, tenant)) else 0


def wait_until(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_tokens_are_hashed_checked_revoked_and_rotated(redis_url, gateway):
    token = admin(redis_url, "token", "create", "team-a")
    assert token.startswith("kjt_") and len(token) == 68
    stored = redis.Redis(unix_socket_path=redis_url[len("unix://"):]).hgetall(keys.tokens(0))
    assert token.encode() not in b"".join(list(stored) + list(stored.values())), "the token itself is stored"
    wait_until(lambda: gateway.request("POST", "/v1/jobs", as_json(trivial("a-0")), token)[0] == 202)

    assert gateway.request("POST", "/v1/jobs", as_json(trivial("a-1")))[0] == 401
    status, data = gateway.request("POST", "/v1/jobs", as_json(trivial("a-1")), "kjt_" + "0" * 64)
    assert status == 401 and error_code(data) == "unauthorized"
    # a job naming another tenant is refused; another tenant's job is invisible
    status, data = gateway.request("POST", "/v1/jobs", as_json(trivial("a-2", tenant="team-b")), token)
    assert status == 403 and error_code(data) == "forbidden_tenant"
    other = admin(redis_url, "token", "create", "team-b")
    wait_until(lambda: gateway.request("GET", "/v1/jobs/a-0", token=other)[0] == 404)
    assert gateway.request("GET", "/v1/jobs/a-0", token=token)[0] == 202  # pending, no kjudged here

    rotated = admin(redis_url, "token", "rotate", "team-a")
    wait_until(lambda: gateway.request("GET", "/v1/jobs/a-0", token=token)[0] == 401)
    assert gateway.request("GET", "/v1/jobs/a-0", token=rotated)[0] == 202
    assert json.loads(admin(redis_url, "--json", "token", "list")) == {"team-a": 1, "team-b": 1}
    admin(redis_url, "token", "revoke", "team-a")
    wait_until(lambda: gateway.request("GET", "/v1/jobs/a-0", token=rotated)[0] == 401)
    assert refusals(gateway.metrics(), "unauthorized", "") >= 3
    assert stream_length(redis_url, "team-a") == 1 and stream_length(redis_url, "team-b") == 0


def test_bad_input_is_a_clear_4xx_and_writes_nothing(redis_url, gateway):
    token = admin(redis_url, "token", "create", "team-a")
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=token)[0] == 404)
    cases = [
        ("{not json", "application/json", 400, "bad_json"),
        ('{"job_id": "x", "no_such_field": 1}', "application/json", 400, "bad_json"),
        (b"\xff\xff\xff\xff garbage", "application/x-protobuf", 400, "bad_protobuf"),
        (gateway_pb2.SubmitBatch(batch_id="b").SerializeToString() + b"\x9a\x01\x02hi", "application/x-protobuf", 400,
         "bad_protobuf"),  # well-formed protobuf with a field a Job does not have
        (job_pb2.Job(job_id="no-task").SerializeToString(), "application/x-protobuf", 400, "no_task"),
        (as_json(trivial("bad id!")), "application/json", 400, "bad_job_id"),
        (as_json(trivial("t")), "text/plain", 415, "unsupported_media_type"),
        (as_json(trivial("big", client_meta={"pad": "x" * 9000})), "application/json", 413, "job_too_large"),
        (b"x" * 70000, "application/json", 413, "request_too_large"),
    ]
    for body, media, want_status, want_code in cases:
        status, data = gateway.request("POST", "/v1/jobs", body, token, content_type=media)
        assert (status, error_code(data)) == (want_status, want_code), (body[:40], data)
    status, data = gateway.request("POST", "/v1/batches", '{"batch_id": "b1", "jobs": []}', token)
    assert (status, error_code(data)) == (400, "empty_batch")
    assert stream_length(redis_url, "team-a") == 0
    text = gateway.metrics()
    for reason in ("bad_json", "bad_protobuf", "job_too_large", "request_too_large", "unsupported_media_type"):
        assert refusals(text, reason, "team-a") >= 1, (reason, text)
    # and the gateway still serves
    assert gateway.request("POST", "/v1/jobs", as_json(trivial("good")), token)[0] == 202


@pytest.fixture
def quota_tokens(redis_url):
    """Tokens of "tiny" and "slow", made before the gateway starts (it loads them at start)."""
    return [admin(redis_url, "token", "create", t) for t in ("tiny", "slow")]


@pytest.fixture
def gateway_without_readings(redis_url, tmp_path, quota_tokens):
    """A gateway whose quota counts only its own admissions: a reading of Redis that overlaps a
    write counts that job twice until the next one (src/gateway/limits.h), which would make an
    exact count of refusals depend on when the refresher ran."""
    yield from serving(Gateway(redis_url, tmp_path, SMALL_CONFIG.replace("queued_refresh_ms = 50",
                                                                         "queued_refresh_ms = 600000")))


def test_quota_and_rate_are_enforced_before_redis(redis_url, quota_tokens, gateway_without_readings):
    gateway, (tiny, slow) = gateway_without_readings, quota_tokens
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=slow)[0] == 404)
    codes = [gateway.request("POST", "/v1/jobs", as_json(trivial(f"t-{i}")), tiny)[0] for i in range(8)]
    assert codes == [202] * 5 + [429] * 3
    # a batch that would pass the quota is refused whole
    body = gateway_pb2.SubmitBatch(batch_id="b", jobs=[trivial("tb-0"), trivial("tb-1")]).SerializeToString()
    status, data = gateway.request("POST", "/v1/batches", body, tiny, content_type="application/x-protobuf")
    assert (status, error_code(data)) == (429, "over_quota")
    assert stream_length(redis_url, "tiny") == 5

    codes = [gateway.request("POST", "/v1/jobs", as_json(trivial(f"s-{i}")), slow)[0] for i in range(5)]
    assert codes == [202] * 3 + [429] * 2
    text = gateway.metrics()
    assert refusals(text, "over_quota", "tiny") == 4 and refusals(text, "rate_limited", "slow") == 2


def start_kjudged(redis_url, tmp_path, metrics_port=0):
    state = Path(tempfile.mkdtemp(prefix="kjudge-gw-state."))
    state.chmod(0o711)
    cfg = tmp_path / "kjudged.toml"
    cfg.write_text(f'[daemon]\nnode = "gw-node"\nstate_dir = "{state}"\nworkers = 2\n'
                   f"[testing]\nallow_trivial_switches = true\n[metrics]\nport = {metrics_port}\n")
    log = open(tmp_path / "kjudged.log", "w")
    proc = subprocess.Popen([str(BIN / "kjudged"), "--config", str(cfg), "--redis", redis_url],
                            stdout=log, stderr=subprocess.STDOUT)
    r = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    wait_until(lambda: r.exists(keys.node(0, "gw-node")) or proc.poll() is not None, 30)
    assert proc.poll() is None, (tmp_path / "kjudged.log").read_text()
    return proc


@pytest.fixture
def kjudged(redis_url, tmp_path):
    port = free_port()
    proc = start_kjudged(redis_url, tmp_path, port)
    proc.metrics_port = port
    yield proc
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0


def test_a_flood_leaves_another_tenants_jobs_judged_and_redis_bounded(redis_url, gateway, kjudged):
    flood = admin(redis_url, "token", "create", "flood")
    calm = admin(redis_url, "token", "create", "calm")
    r = redis.Redis(unix_socket_path=redis_url[len("unix://"):])
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=calm)[0] == 404)
    before = r.info("memory")["used_memory"]
    stop = threading.Event()
    sent = [0]

    def flooder(n):
        client = GatewayClient(gateway.url, flood)
        payload = "x" * 3000
        i = 0
        while not stop.is_set():
            job = trivial(f"f{n}-{i}", client_meta={"pad": payload})
            job.trivial.argv[:] = ["/bin/sleep", "0.2"]  # slow jobs: the flood's queue stays full
            try:
                client.submit(job)
            except (QueueFull, GatewayError):  # over its quota (or rate): what the flood is for
                pass
            i += 1
            sent[0] += 1

    threads = [threading.Thread(target=flooder, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        client = GatewayClient(gateway.url, calm)
        for i in range(4):
            client.submit(trivial(f"c-{i}"))
        results = [client.wait("calm", f"c-{i}", 60) for i in range(4)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert [verdict_pb2.Verdict.Name(x.status) for x in results] == ["OK"] * 4, [x.message for x in results]
    text = gateway.metrics()
    assert refusals(text, "over_quota", "flood") > 0 and sent[0] > 100
    assert refusals(text, "over_quota", "calm") == 0 and refusals(text, "rate_limited", "calm") == 0
    # the nodes' view per tenant (the dashboard's queue wait per tenant)
    node_metrics = urllib.request.urlopen(f"http://127.0.0.1:{kjudged.metrics_port}/metrics", timeout=10).read().decode()
    assert 'kjudge_tenant_queue_wait_seconds_count{tenant="calm"} 4' in node_metrics
    # the flood holds at most its quota of jobs in Redis: 40 x ~3 KB, far below what it sent
    queued = int(r.get(keys.queued(0, "flood")) or 0)
    assert queued <= 40 + 3, queued
    assert r.info("memory")["used_memory"] - before < 4 * 1024 * 1024


def test_a_thousand_submissions_survive_a_gateway_restart_and_are_judged(redis_url, gateway, kjudged):
    token = admin(redis_url, "token", "create", "bulk")
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=token)[0] == 404)
    ids = [f"bulk-{i}" for i in range(1000)]
    errors, acknowledged = [], []

    def submitter(part):
        client = GatewayClient(gateway.url, token)
        try:
            for job_id in part:  # single submissions: each one acknowledged only once Redis has it
                job = trivial(job_id, batch_id="bulk")
                job.trivial.skip_sandbox = True
                client.submit(job)
                acknowledged.append(job_id)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=submitter, args=(ids[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    wait_until(lambda: len(acknowledged) >= 100, 30)
    assert gateway.stop() == 0  # SIGTERM mid-stream: clients see resets and retry
    assert len(acknowledged) < 900, "the restart came too late to test anything"
    gateway.start()
    for t in threads:
        t.join()
    assert not errors, errors
    client = GatewayClient(gateway.url, token)
    assert client.wait_batch("bulk", "bulk", 120), client.batch_status("bulk", "bulk")
    st = client.batch_status("bulk", "bulk")
    assert st["submitted"] == 1000 and st["completed"] == 1000 and st["verdicts"] == {"OK": 1000}, st
    assert stream_length(redis_url, "bulk") <= 1000  # nothing doubled either
    r = client.wait("bulk", "bulk-999", 5)
    assert isinstance(r, result_pb2.Result) and verdict_pb2.Verdict.Name(r.status) == "OK"


def test_shipped_config_loads_and_unit_verifies(tmp_path):
    """The sample config is one the gateway accepts, and systemd's parser accepts the unit."""
    config = (ROOT / "systemd" / "kjudge-gateway.toml").read_text().replace('"kj-gateway"', '""')
    (tmp_path / "gw.toml").write_text(config)
    p = subprocess.run([str(BIN / "kjudge-gateway"), "-c", str(tmp_path / "gw.toml"), "--redis", "tcp://127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "127.0.0.1:1" in p.stderr and ".toml" not in p.stderr, p.stderr  # config fine, Redis away
    analyze = "/usr/bin/systemd-analyze"
    if not os.path.exists(analyze):
        pytest.skip("systemd-analyze not installed")
    unit = (ROOT / "systemd" / "kjudge-gateway.service").read_text()
    (tmp_path / "kjudge-gateway.service").write_text(unit.replace("/usr/local/bin/kjudge-gateway", str(BIN / "kjudge-gateway")))
    p = subprocess.run([analyze, "verify", str(tmp_path / "kjudge-gateway.service")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "kjudge-gateway.service" not in p.stderr, p.stderr


def test_the_gateway_runs_as_its_own_redis_user_that_cannot_ack(redis_url, tmp_path):
    """kjudge admin acl-gateway: the gateway submits, reads and cancels for every tenant under
    kj-gateway, which cannot acknowledge a job (kjudged's functions refuse it)."""
    from kjudge.client import Client
    Client(redis_url).load_functions()  # kjudged does it; the gateway's user may not
    admin(redis_url, "acl-gateway", "--password", "gw-secret", "--apply")
    token = admin(redis_url, "token", "create", "team-a")
    config = SMALL_CONFIG + '[redis]\nusername = "kj-gateway"\npassword = "gw-secret"\n'
    gw = Gateway(redis_url, tmp_path, config)
    try:
        wait_until(lambda: gw.request("GET", "/v1/batches/none", token=token)[0] == 404)
        assert gw.request("POST", "/v1/jobs", as_json(trivial("acl-1", batch_id="b")), token)[0] == 202
        assert gw.request("GET", "/v1/jobs/acl-1/wait?timeout_s=0.2", token=token)[0] == 202
        assert gw.request("GET", "/v1/batches/b", token=token)[0] == 200
        assert gw.request("DELETE", "/v1/jobs/acl-1", token=token)[0] == 202
    finally:
        assert gw.stop() == 0, gw.log_path.read_text()
    as_gateway = redis.Redis(unix_socket_path=redis_url[len("unix://"):], username="kj-gateway", password="gw-secret")
    with pytest.raises(redis.ResponseError, match="NOPERM|no permissions"):
        as_gateway.xack(keys.jobs(0, "team-a"), "kjudged", "0-1")
    with pytest.raises(redis.ResponseError, match="NOPERM|no permissions"):
        as_gateway.set("kj:{p0}:config", "x")


def test_the_cli_submits_waits_and_reads_batches_through_the_gateway(redis_url, gateway, kjudged):
    token = admin(redis_url, "token", "create", "team-c")
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=token)[0] == 404)
    env = dict(os.environ, KJUDGE_TOKEN=token)

    def cli(*args):
        return subprocess.run([str(BIN / "kjudge"), "--redis", gateway.url, *args], capture_output=True, text=True,
                              timeout=60, env=env)

    p = cli("submit", "--trivial", "--job-id", "cli-1", "--batch", "cb")
    assert p.returncode == 0 and p.stdout.strip() == "cli-1", p.stderr
    p = cli("wait", "cli-1", "--json", "--timeout", "30")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "OK", p.stderr
    p = cli("batch", "cb", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["completed"] == 1, p.stderr
    assert json.loads(p.stdout)["turns"] == {"groups": 0, "solved_first_turn": 0, "solved": 0, "last_turn": 0,
                                             "first_turn": None, "best_of_turns": None}  # no job named a group
    assert cli("batch", "no-such-batch").returncode == 3
    assert cli("submit", "--trivial", "--job-id", "cli-2", "--tenant", "team-d").returncode == 1  # 403: not the token's
    assert cli("cancel", "cli-1").returncode == 0
    bad = subprocess.run([str(BIN / "kjudge"), "--redis", gateway.url, "wait", "cli-1"], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, KJUDGE_TOKEN="kjt_wrong"))
    assert bad.returncode == 3 and "unauthorized" in bad.stderr


def test_judge_many_takes_a_gateway_url(redis_url, gateway, kjudged, monkeypatch):
    from kjudge.judging import judge_many
    monkeypatch.setenv("KJUDGE_TOKEN", admin(redis_url, "token", "create", "team-e"))
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=os.environ["KJUDGE_TOKEN"])[0] == 404)
    results = judge_many([trivial(f"jm-{i}", tenant="team-e") for i in range(3)], redis_url=gateway.url, timeout_s=60)
    assert [verdict_pb2.Verdict.Name(r.status) for r in results] == ["OK"] * 3


def test_tls_where_configured(redis_url, tmp_path):
    """[gateway] tls_cert/tls_key: HTTPS only; the Python client verifies the certificate."""
    import ssl
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    token = admin(redis_url, "token", "create", "team-a")
    gw = Gateway(redis_url, tmp_path, SMALL_CONFIG.replace("[gateway]\n", f'[gateway]\ntls_cert = "{cert}"\ntls_key = "{key}"\n'))
    try:
        client = GatewayClient(f"https://127.0.0.1:{gw.port}", token,
                               ssl_context=ssl.create_default_context(cafile=str(cert)))
        assert client.submit(trivial("tls-1"))[1] is False
        assert client.batch_status("team-a", "none")["submitted"] == 0
        with pytest.raises((http.client.HTTPException, OSError)):  # plain HTTP to the TLS port: no HTTP reply
            gw.request("GET", "/livez")
        untrusting = GatewayClient(f"https://127.0.0.1:{gw.port}", token)  # the system's CAs only
        with pytest.raises(QueueError, match="certificate verify failed"):
            untrusting.submit(trivial("tls-2"))
        assert stream_length(redis_url, "team-a") == 1
        # the CLI: the private CA through SSL_CERT_FILE, else a clear refusal (no resending)
        cli = [str(BIN / "kjudge"), "--redis", f"https://127.0.0.1:{gw.port}", "submit", "--trivial", "--job-id"]
        env = dict(os.environ, KJUDGE_TOKEN=token)
        p = subprocess.run(cli + ["tls-3"], capture_output=True, text=True, timeout=60, env=dict(env, SSL_CERT_FILE=str(cert)))
        assert p.returncode == 0 and p.stdout.strip() == "tls-3", p.stderr
        p = subprocess.run(cli + ["tls-4"], capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 1 and "TLS" in p.stderr and "certificate verify failed" in p.stderr, p.stderr
        assert stream_length(redis_url, "team-a") == 2
    finally:
        assert gw.stop() == 0, gw.log_path.read_text()


def test_tenant_connections_past_the_cap_get_503_and_idle_ones_time_out(redis_url, tmp_path):
    # max_connections counts authenticated connections; strangers have a budget of their own
    # (tests/python/gateway/test_gateway_hostile.py)
    config = SMALL_CONFIG.replace("[gateway]\n", "[gateway]\nmax_connections = 2\nidle_timeout_s = 4\n")
    token = admin(redis_url, "token", "create", "team-a")
    gw = Gateway(redis_url, tmp_path, config)
    auth = {"Authorization": "Bearer " + token}

    def holding():
        """A keep-alive connection that made one request; None when it was refused (a loaded machine:
        the gateway may still count an earlier request's connection that it has not seen close)."""
        c = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
        c.request("GET", "/v1/batches/none", headers=auth)
        r = c.getresponse()
        r.read()
        return c if r.status == 404 else c.close()
    try:
        wait_until(lambda: gw.request("GET", "/v1/batches/none", token=token)[0] == 404)
        held = []
        wait_until(lambda: held.append(holding()) or len([c for c in held if c]) == 2, timeout_s=10)
        status, data = gw.request("GET", "/v1/batches/none", token=token)
        assert status == 503 and error_code(data) == "too_many_connections"
        assert gw.request("GET", "/livez")[0] == 200  # a stranger's request is served beside them
        # the held ones idle out after idle_timeout_s, and their places come back
        wait_until(lambda: gw.request("GET", "/v1/batches/none", token=token)[0] == 404, timeout_s=15)
        assert refusals(gw.metrics(), "too_many_connections", "team-a") >= 1
    finally:
        assert gw.stop() == 0, gw.log_path.read_text()
