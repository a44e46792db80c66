"""kjudge.integrations.openrlhf's HTTP server (the asyncio one) against a real redis-server with
kjudge's functions and no daemon: its HTTP (keep-alive, a refused request's body, Expect:
100-continue), the token check on every request, the coalescing of concurrent requests into
shared Redis round trips with each request's quota refusal its own, the deadline (a sample
without a verdict gets `unscored`, flagged, never a candidate's number, and its job is cancelled)
and, over a real kjudge-gateway, the gateway's token check.
With the daemon and OpenRLHF's own client: tests/trainers/test_openrlhf.py."""

import base64
import hashlib
import http.client
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kjudge import keys
from kjudge.client import Client
from kjudge.integrations.openrlhf import KjudgeRewardServer
from test_gateway import admin, gateway, wait_until  # noqa: F401  (a real kjudge-gateway)

REFERENCE = (Path(__file__).resolve().parents[2] / "kernelbench" / "tasks" / "activation_relu" / "reference.py").read_text()
TOKEN = "kjt_openrlhf_server_test_0123456789abcdef"
UNSCORED = -0.25


def start(redis_url, **kw):
    client = Client(redis_url)
    client.load_functions()
    client.redis.hset(keys.tokens(0), hashlib.sha256(TOKEN.encode()).hexdigest(), "dev")
    server = KjudgeRewardServer(("127.0.0.1", 0), redis_url=redis_url, unscored=UNSCORED, backend="cpu", **kw)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return client, server


def stop(server):
    server.shutdown()
    server.server_close()


def body(text="no code here", i=0):
    return json.dumps({"query": ["PROMPT" + text + " %d" % i], "prompts": ["PROMPT"], "labels": [REFERENCE]})


def ask(conn, method, path, data=None, headers=None):
    conn.request(method, path, body=data, headers=headers or {})
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), json.loads(r.read())


def test_http_auth_and_deadline(redis_url):
    client, server = start(redis_url, deadline_s=0.5)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=30)
        assert ask(conn, "GET", "/livez")[0] == 200
        assert ask(conn, "GET", "/nothing")[0] == 404
        bearer = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
        assert ask(conn, "POST", "/elsewhere", body(), bearer)[0] == 404
        status, headers, reply = ask(conn, "POST", "/reward", body(), {})
        assert status == 401 and "Bearer" in headers["WWW-Authenticate"] and reply["error"] == "unauthorized"
        assert ask(conn, "POST", "/reward", body(), {"Authorization": "Bearer kjt_wrong"})[0] == 401
        sock = conn.sock
        assert ask(conn, "GET", "/readyz")[0] == 200 and conn.sock is sock  # the refused body was read: kept alive
        assert ask(conn, "POST", "/reward", "{not json", bearer)[0] == 400
        assert ask(conn, "POST", "/reward", json.dumps({"query": ["q"]}), bearer)[0] == 400  # no label
        assert server.judged == 0 and client.redis.xlen(keys.jobs(0, "dev")) == 0

        # basic auth (OpenRLHF's http://user:token@host URL); no daemon: past the deadline the
        # sample gets `unscored`, flagged, and its job is cancelled in the queue
        basic = {"Authorization": "Basic " + base64.b64encode(b"kjudge:" + TOKEN.encode()).decode()}
        status, _h, reply = ask(conn, "POST", "/reward", body(), basic)
        assert status == 200, reply
        assert reply["rewards"] == reply["scores"] == [UNSCORED] and reply["verdicts"] == ["JUDGE_TIMEOUT"]
        assert reply["extra_logs"]["kjudge_scored"] == [0.0] and reply["extra_logs"]["kjudge_infra_error"] == [1.0]
        assert 0 < time.time() - reply["received_at"] < reply["wall_s"] + 5  # when the server read the request
        assert client.redis.exists(keys.cancel(0, "dev", reply["job_ids"][0]))
        assert server.judged == 1 and client.redis.xlen(keys.jobs(0, "dev")) == 1

        # Expect: 100-continue (curl sends it for large bodies): the body is asked for after the token check
        data = body("expect").encode()
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=30) as s:
            s.sendall(b"POST /reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nExpect: 100-continue\r\n"
                      b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (TOKEN.encode(), len(data)))
            assert s.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(data)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
        assert got.startswith(b"HTTP/1.1 200 OK\r\n") and b'"JUDGE_TIMEOUT"' in got

        # the token is looked up on every request: revoked, refused at once
        client.redis.hdel(keys.tokens(0), hashlib.sha256(TOKEN.encode()).hexdigest())
        assert ask(conn, "POST", "/reward", body(), bearer)[0] == 401
        assert server.judged == 2
    finally:
        stop(server)


def test_concurrent_requests_share_round_trips_and_keep_their_own_quota_refusal(redis_url):
    client, server = start(redis_url, deadline_s=3)
    client.redis.hset(keys.quotas(0), "dev", 40)  # 40 jobs waiting for a result at most
    calls, first = [], threading.Event()
    submit_many = server.pool.client.submit_many

    def counted(jobs, *a, **kw):
        calls.append(len(jobs))
        if not first.is_set():  # the first round trip is slow: the other requests pile up behind it
            first.set()
            threading.Event().wait(1.0)
        return submit_many(jobs, *a, **kw)
    server.pool.client.submit_many = counted
    url = "/reward"

    def post(i):
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=60)
        try:
            return ask(conn, "POST", url, body("sample", i), {"Authorization": "Bearer " + TOKEN})
        finally:
            conn.close()
    try:
        with ThreadPoolExecutor(64) as ex:
            replies = list(ex.map(post, range(64)))
    finally:
        stop(server)
    assert all(status == 200 for status, _h, _r in replies), replies[:3]
    verdicts = [r["verdicts"][0] for _s, _h, r in replies]
    # the quota refused the jobs past 40, each request its own: the others were queued (and,
    # with no daemon, given up at the deadline); none of them is scored
    assert verdicts.count("JUDGE_TIMEOUT") == 40 and verdicts.count("QUEUE_ERROR") == 24, verdicts
    assert all(r["rewards"] == [UNSCORED] and r["extra_logs"]["kjudge_scored"] == [0.0] for _s, _h, r in replies)
    # 64 requests, a few pipelined round trips: the first of each turn of the loop alone, the rest together
    assert sum(calls) == 64 and len(calls) <= 16 and max(calls) >= 32, repr(calls)
    assert client.redis.xlen(keys.jobs(0, "dev")) == 40


def test_over_a_gateway_the_gateway_checks_the_token(redis_url, gateway):  # noqa: F811
    # --redis http(s)://gateway: the server passes the token on; each request's judge_many holds a thread
    token = admin(redis_url, "token", "create", "team-a")
    wait_until(lambda: gateway.request("GET", "/v1/batches/none", token=token)[0] == 404)  # the gateway knows it
    server = KjudgeRewardServer(("127.0.0.1", 0), redis_url=gateway.url, unscored=UNSCORED, backend="cpu",
                                deadline_s=1.0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=60)
        assert ask(conn, "POST", "/reward", body(), {})[0] == 401  # no token: refused here
        status, _h, reply = ask(conn, "POST", "/reward", body(), {"Authorization": "Bearer kjt_" + "0" * 64})
        assert status == 401 and reply["error"] == "unauthorized", reply  # the gateway's refusal, passed on
        # no kjudged: queued through the gateway as team-a's, then unscored at the deadline
        status, _h, reply = ask(conn, "POST", "/reward", body(), {"Authorization": "Bearer " + token})
        assert status == 200, reply
        assert reply["rewards"] == [UNSCORED] and reply["verdicts"] == ["JUDGE_TIMEOUT"], reply
        assert reply["extra_logs"]["kjudge_scored"] == [0.0]
        assert Client(redis_url).redis.xlen(keys.jobs(0, "team-a")) == 1  # the token's tenant's job
    finally:
        stop(server)
