"""kjudge as OpenRLHF's remote reward model (`--remote_rm_url`): a small HTTP server over the
client.

    python -m kjudge.integrations.openrlhf --port 8490 --redis unix:///run/kjudge/redis.sock \\
        --backend cuda --problems KernelBench/KernelBench
    # the trainer (the token is the tenant's API token, as for the gateway):
    openrlhf.cli.train_ppo_ray ... --remote_rm_url http://kjudge:$KJUDGE_TOKEN@judge-host:8490/reward \\
        --label_key problem_id

OpenRLHF (0.11) posts JSON {"query": [...], "prompts": [...], "labels": [...]} to the URL (one
query per request as its rollout finishes a sample; a list is fine too) and reads back
{"rewards": [...], "scores": [...], "extra_logs": {name: [...]}}, one number per query. The query
is the decoded prompt and response; the server judges the response (the text after the prompt)
against the label's reference, and answers with each job's Result.reward.

The label names the reference: a problem id of --problems (a KernelBench dataset folder, ids
"L<level>/<file stem>"), a JSON object {"reference": source, <job options>...}, or the
reference source itself.

Authentication: every request carries a tenant's API token (`kjudge admin token create <tenant>`),
as `Authorization: Bearer <token>` or as the password of HTTP basic auth, which is what a
`http://user:<token>@host/` URL makes aiohttp (OpenRLHF's client) send. With a Redis URL the
server looks the token up where the gateway does (kj:{pN}:tokens, SHA-256) on every request, and
the jobs are the token's tenant's; with a kjudge-gateway URL (http(s)://) it passes the token on
and the gateway checks it (the jobs are its tenant's too). No token, or an unknown one: 401.

Not scored is not the candidate's: OpenRLHF needs a number for every sample, so a query the judge
did not score (an infrastructure fault, a bad reference, no verdict by --deadline-s) gets
--unscored (default 0.0) with extra_logs kjudge_scored 0 and kjudge_infra_error 1, which OpenRLHF
averages into its logged metrics; the verdicts are in the reply's "verdicts". --deadline-s
(default 170) stays under OpenRLHF's own 180 s request timeout: past it the jobs are cancelled.

The server is one asyncio loop (stdlib streams, no thread per request). A rollout posts every
sample of a step at once, hundreds of one-query requests: the first of a turn of the loop is
looked up and submitted at once, the others of that turn share one pipelined Redis round trip,
so a step costs a few round trips, not one per request, and no request waits for company. The
round trips are made on the loop's thread (a hop to a thread and back cost more), so while Redis
is unreachable or failing over (the client's retries) the server answers nothing, its health
endpoints included. One thread per tenant reads the queue's completion stream (JudgePool) and
each request is answered as its verdicts land.

Retries are idempotent: a job's id is a hash of the tenant, the query, its prompt and label and
its place in the request, so OpenRLHF posting a request again (its client retries on a timeout or
a broken connection) waits for the jobs of the first post instead of queueing new ones. The same
query posted again while its result is kept (1 h) gets that result."""

import argparse
import asyncio
import base64
import concurrent.futures
import hashlib
import json
import socket
import sys
import threading
import time
from collections import deque
from http import HTTPStatus
from pathlib import Path

from kjudge import keys
from kjudge.client import QueueError
from kjudge.gateway_client import GatewayClient, GatewayError, is_gateway_url
from kjudge.integrations.pool import JudgePool
from kjudge.jobs import build_job
from kjudge.reward import JOB_OPTIONS, not_judged, score_result

_NOT_FROM_LABEL = ("tenant", "job_id", "meta")
_MAX_BODY = 64 * 1024 * 1024
_MAX_HEADERS = 100
_LINE_LIMIT = 64 * 1024  # one request or header line
# a rollout posts every sample of a step at once (hundreds of connections): socketserver's
# backlog of 5 made the kernel reset most of them (bench/trainers/overhead.py, 256 at once)
_BACKLOG = 4096


def response_of(query, prompt):
    """The response part of OpenRLHF's query (decoded prompt + response tokens)."""
    if prompt:
        if query.startswith(prompt):
            return query[len(prompt):]
        at = query.rfind(prompt)
        if at >= 0:
            return query[at + len(prompt):]
    return query


def request_job_id(who, query, prompt, label, index):
    """The job id of a request's index-th query: the same request posted again names the same job."""
    h = hashlib.sha256()
    for part in (who or "", query, prompt or "", label if isinstance(label, str) else json.dumps(label, sort_keys=True),
                 str(index)):
        h.update(part.encode())
        h.update(b"\0")
    return "orl-" + h.hexdigest()[:40]


def token_of(authorization):
    """The API token of an Authorization header: Bearer, or the password of basic auth."""
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip()).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return ""
    return ""


class _Coalescer:
    """`await c(item)` -> fn([items])[its place], fn run on the loop's thread. The first caller of
    a turn of the event loop is served at once, alone (the first request of a step waits for
    nothing); the others of that turn go to one call of fn at the end of the turn. So a burst of
    concurrent requests costs two calls (two Redis round trips) per turn, not one per request.
    fn runs on the loop, not in a worker thread, which must win the GIL from the loop while a burst
    is parsed: in traced steps under load a one-job submission took up to 23 ms through a thread.
    On the loop it took 0.4-8 ms, under heavier load. Meanwhile the loop has nothing better to do
    than wait for the queue. fn returns one result per item (an
    exception instance there is raised to that caller alone); an exception out of fn goes to
    every caller of that call."""

    def __init__(self, fn):
        self.fn = fn
        self.queue = []
        self.turn_open = False

    async def __call__(self, item):
        loop = asyncio.get_running_loop()
        if not self.turn_open:
            self.turn_open = True
            loop.call_soon(self._end_turn)
            result = self._call([item])[0]
            if isinstance(result, Exception):
                raise result
            return result
        fut = loop.create_future()
        self.queue.append((item, fut))
        return await fut

    def _call(self, items):
        try:
            return self.fn(items)
        except Exception as e:  # noqa: BLE001 - handed to the callers
            return [e] * len(items)

    def _end_turn(self):
        self.turn_open = False
        batch, self.queue = self.queue, []
        if not batch:
            return
        for (_item, fut), result in zip(batch, self._call([item for item, _f in batch])):
            if fut.done():
                continue
            if isinstance(result, Exception):
                fut.set_exception(result)
            else:
                fut.set_result(result)


class _Refuse(Exception):
    """An HTTP error answer: status and the JSON body's error and message. unread: refused
    before its body was read (close: the connection can't go on)."""

    def __init__(self, status, error, message, *, close=False, unread=False):
        super().__init__(message)
        self.status, self.error, self.close, self.unread = status, error, close, unread


_DRAIN_MAX = 1024 * 1024


async def _skip_body(reader, headers):
    """Reads and drops a refused request's body, so that closing does not reset the connection
    under the answer (the kernel resets a socket closed with unread data); False where it can't
    be (too large, or held back by Expect: 100-continue): the connection must close."""
    try:
        length = int(headers.get("content-length") or 0)
    except ValueError:
        return False
    if length > _DRAIN_MAX or headers.get("expect", "").lower() == "100-continue":
        return False
    if length > 0:
        await reader.readexactly(length)
    return True


def _http_reply(status, obj, keep_alive):
    body = json.dumps(obj).encode()
    head = ["HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase), "Content-Type: application/json",
            "Content-Length: %d" % len(body)]
    if status == 401:
        head.append('WWW-Authenticate: Bearer realm="kjudge", Basic realm="kjudge"')
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def _read_head(reader):
    """(method, target, version, headers with lower-case names) of the next request; None at the
    end of the connection. A malformed head raises _Refuse."""
    try:
        line = await reader.readline()
    except (ValueError, asyncio.LimitOverrunError):
        raise _Refuse(431, "bad_request", "request line too long", close=True)
    if not line.strip():
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _Refuse(400, "bad_request", "not an HTTP/1.x request line", close=True)
    headers = {}
    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            raise _Refuse(431, "bad_request", "header line too long", close=True)
        if line in (b"\r\n", b"\n", b""):
            break
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or len(headers) >= _MAX_HEADERS:
            raise _Refuse(400, "bad_request", "a malformed header, or too many", close=True)
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], parts[2], headers


def _parse_body(raw):
    """(queries, prompts, labels) of OpenRLHF's JSON body; ValueError/KeyError/TypeError if bad."""
    data = json.loads(raw)
    queries = data["query"]
    queries = [queries] if isinstance(queries, str) else list(queries)
    prompts = data.get("prompts") or [""] * len(queries)
    labels = data.get("labels") or [None] * len(queries)
    if not (len(queries) == len(prompts) == len(labels)) or not all(isinstance(q, str) for q in queries):
        raise ValueError("query, prompts and labels: lists of one length, queries text")
    if any(l is None for l in labels):
        raise ValueError("every query needs its label (the problem's reference or id)")
    return queries, prompts, labels


class KjudgeRewardServer:
    """The server. serve_forever() runs it in the calling thread (an asyncio loop) until
    shutdown() from another thread; server_port is bound at construction. `judged` counts the
    jobs, `history` keeps the latest queries' details (job_id, verdict, score, response)."""

    def __init__(self, address, *, redis_url=None, partition=0, problems=None, unscored=0.0, deadline_s=170.0,
                 path="/reward", **job_options):
        self.redis_url = redis_url
        self.partition = partition
        self.problems = dict(problems or {})
        self.unscored = float(unscored)
        self.deadline_s = float(deadline_s)
        self.path = path
        self.job_options = {k: v for k, v in job_options.items() if k in JOB_OPTIONS and k not in _NOT_FROM_LABEL}
        self.over_gateway = bool(redis_url) and is_gateway_url(redis_url)
        self._gateway_clients = {}
        self._lock = threading.Lock()
        self.pool = None if self.over_gateway else JudgePool(redis_url, partition=partition)
        self.judged = 0
        self.history = deque(maxlen=4096)
        host, port = address
        family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, backlog=_BACKLOG)
        self.server_address = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        # the late jobs' cancels (past the deadline) run here; over a gateway each request's
        # judge_many holds a thread until its verdicts, as before
        self._redis_threads = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="kjudge-orl")
        self._gateway_threads = concurrent.futures.ThreadPoolExecutor(1024, thread_name_prefix="kjudge-orl-gw")
        self._loop = self._stop = None
        self._stopped = threading.Event()
        self._shutdown_asked = False

    # -- authentication ---------------------------------------------------------------------

    def tenant_of(self, token):
        """The token's tenant (Redis mode), or None."""
        return self.tenants_of([token])[0]

    def tenants_of(self, tokens):
        """tenant_of() for many tokens in one round trip (kj:{pN}:tokens, as the gateway's)."""
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in tokens if t]
        r = self.pool.client
        found = iter(r._call(r.redis.hmget, keys.tokens(self.partition), hashes) if hashes else [])
        out = []
        for t in tokens:
            raw = next(found) if t else None
            out.append(raw.decode() if isinstance(raw, bytes) else raw)
        return out

    def gateway_client(self, token):
        with self._lock:
            if token not in self._gateway_clients:
                self._gateway_clients[token] = GatewayClient(self.redis_url, token=token)
            return self._gateway_clients[token]

    # -- judging ----------------------------------------------------------------------------

    def job_args(self, label):
        """build_job arguments for a label (see the module docstring)."""
        args = dict(self.job_options)
        if label in self.problems:
            args["reference"], args["problem_id"] = self.problems[label], label
            return args
        text = label if isinstance(label, str) else json.dumps(label)
        if isinstance(label, dict) or text.lstrip().startswith("{"):
            try:
                obj = label if isinstance(label, dict) else json.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and "reference" in obj:
                args.update({k: v for k, v in obj.items() if k in JOB_OPTIONS and k not in _NOT_FROM_LABEL})
                args["reference"] = obj["reference"]
                return args
        args["reference"] = text
        return args

    def _jobs_of(self, queries, prompts, labels, tenant, token):
        """([(index, Job)], details): details holds the reward dict of each query whose label is bad."""
        jobs, details = [], [None] * len(queries)
        for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
            args = self.job_args(label)
            try:
                jobs.append((i, build_job(args.pop("reference"), completion=response_of(query, prompt),
                                          job_id=request_job_id(tenant or token, query, prompt, label, i),
                                          tenant=tenant or None,
                                          meta={"data_source": "openrlhf"}, **args)))
            except (TypeError, ValueError) as e:  # the label's options: the dataset's fault
                details[i] = not_judged("INVALID_JOB", "bad label: %s" % e, on_error="none")
        if self.over_gateway:  # no tenant: the gateway takes the token's (a named one must be the token's)
            for _i, job in jobs:
                job.tenant = ""
        return jobs, details

    def _rewards(self, jobs, details, results, error, queries, prompts):
        """(rewards, details) from the jobs' results (or the QueueError that kept them from the judge)."""
        for (i, job), result in zip(jobs, results):
            details[i] = (not_judged("QUEUE_ERROR", str(error), on_error="none") if error is not None
                          else score_result(result, on_error="none"))
            details[i]["job_id"] = job.job_id
        with self._lock:
            self.judged += len(jobs)
            for d, query, prompt in zip(details, queries, prompts):
                self.history.append(dict(d, response=response_of(query, prompt)))
        rewards = [float(d["score"]) if d["scored"] else self.unscored for d in details]
        return rewards, details

    def score(self, queries, prompts, labels, *, tenant=None, token=None):
        """(rewards, details) for a request's queries, blocking; details: one reward dict per query
        (kjudge.reward's, plus job_id). Over a gateway a 401 raises GatewayError."""
        jobs, details = self._jobs_of(queries, prompts, labels, tenant, token)
        results, error = [None] * len(jobs), None
        try:
            if self.over_gateway:
                from kjudge.judging import judge_many
                results = judge_many([j for _i, j in jobs], client=self.gateway_client(token),
                                     timeout_s=self.deadline_s)
            elif jobs:
                results = self.pool.judge([j for _i, j in jobs], timeout_s=self.deadline_s)
        except QueueError as e:
            if isinstance(e, GatewayError) and e.status == 401:
                raise
            error = e
        return self._rewards(jobs, details, results, error, queries, prompts)

    def _submit_groups(self, groups):
        """The coalesced submission: each request's jobs, grouped by tenant, one pipeline each."""
        out = [None] * len(groups)
        by_tenant = {}
        for n, jobs in enumerate(groups):
            by_tenant.setdefault(jobs[0].tenant, []).append(n)
        for members in by_tenant.values():
            try:
                got = self.pool.submit_groups([groups[n] for n in members])
            except QueueError as e:
                got = [e] * len(members)
            for n, g in zip(members, got):
                out[n] = g
        return out

    async def score_async(self, queries, prompts, labels, *, tenant=None, token=None):
        """score() on the server's loop: Redis mode submits through the coalescer and waits for
        the pool's futures without a thread; over a gateway, score() in a thread."""
        loop = asyncio.get_running_loop()
        if self.over_gateway:
            return await loop.run_in_executor(self._gateway_threads, lambda: self.score(
                queries, prompts, labels, tenant=tenant, token=token))
        jobs, details = self._jobs_of(queries, prompts, labels, tenant, token)
        results, error = [None] * len(jobs), None
        if jobs:
            try:
                tenant_, ids, futures = await self._submitter([j for _i, j in jobs])
                results = await self.pool.collect_async(tenant_, ids, futures, timeout_s=self.deadline_s,
                                                        executor=self._redis_threads)
            except QueueError as e:
                error = e
        return self._rewards(jobs, details, results, error, queries, prompts)

    # -- HTTP -------------------------------------------------------------------------------

    async def _answer(self, method, target, headers, reader, writer):
        """(status, JSON body) for one request; _Refuse for an error answer."""
        if method == "GET":
            if target in ("/livez", "/readyz"):
                return 200, {"ok": True}
            raise _Refuse(404, "not_found", "GET %s" % target, unread=True)
        if method != "POST":
            raise _Refuse(501, "not_implemented", "%s: only GET and POST" % method, unread=True)
        start, received_at = time.monotonic(), time.time()
        if target.split("?")[0] != self.path:
            raise _Refuse(404, "not_found", "POST %s" % self.path, unread=True)
        token = token_of(headers.get("authorization"))
        tenant = None
        if not self.over_gateway:
            try:
                tenant = await self._authenticator(token) if token else None
            except QueueError as e:
                raise _Refuse(503, "queue_unavailable", str(e), unread=True)
            if not tenant:
                raise _Refuse(401, "unauthorized", "no token, or an unknown or revoked one", unread=True)
        elif not token:
            raise _Refuse(401, "unauthorized", "no token", unread=True)
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length <= 0 or length > _MAX_BODY:
            raise _Refuse(400, "bad_request", "a JSON body of at most 64 MiB", close=True)
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        raw = await reader.readexactly(length)
        try:
            queries, prompts, labels = _parse_body(raw)
        except (ValueError, KeyError, TypeError) as e:
            raise _Refuse(400, "bad_request", str(e))
        try:
            rewards, details = await self.score_async(queries, prompts, labels, tenant=tenant, token=token)
        except GatewayError as e:
            raise _Refuse(e.status, e.code, str(e))
        return 200, {
            "rewards": rewards, "scores": rewards,
            "extra_logs": {"kjudge_scored": [1.0 if d["scored"] else 0.0 for d in details],
                           "kjudge_infra_error": [1.0 if d["infra_error"] else 0.0 for d in details],
                           "kjudge_speedup": [float(d["speedup"] or 0.0) for d in details]},
            "verdicts": [d["verdict"] for d in details], "job_ids": [d.get("job_id") for d in details],
            "policy": [d["policy"] for d in details], "received_at": received_at, "wall_s": time.monotonic() - start}

    async def _connection(self, reader, writer):
        """Serves one connection: its requests in turn (HTTP/1.1 keep-alive)."""
        try:
            while True:
                try:
                    head = await _read_head(reader)
                    if head is None:
                        return
                    method, target, version, headers = head
                    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                    try:
                        status, obj = await self._answer(method, target, headers, reader, writer)
                    except _Refuse as r:
                        status, obj = r.status, {"error": r.error, "message": str(r)}
                        keep = keep and not r.close and not (r.unread and not await _skip_body(reader, headers))
                except _Refuse as r:
                    status, obj, keep = r.status, {"error": r.error, "message": str(r)}, False
                writer.write(_http_reply(status, obj, keep))
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass  # the trainer gave up on this request (its timeout); a retry waits for the same jobs
        finally:
            writer.close()

    async def _serve(self):
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        if not self.over_gateway:
            self._authenticator = _Coalescer(self.tenants_of)
            self._submitter = _Coalescer(self._submit_groups)
        server = await asyncio.start_server(self._connection, sock=self.socket, backlog=_BACKLOG, limit=_LINE_LIMIT)
        async with server:
            if not self._shutdown_asked:
                await self._stop.wait()

    def serve_forever(self):
        """Serves until shutdown() (from another thread)."""
        self._stopped.clear()
        try:
            asyncio.run(self._serve())
        finally:
            self._loop = None
            self._stopped.set()

    def shutdown(self):
        """Stops serve_forever and waits for it to return."""
        self._shutdown_asked = True
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop closed meanwhile
                pass
            self._stopped.wait()

    def server_close(self):
        self.socket.close()
        self._redis_threads.shutdown(wait=False)
        self._gateway_threads.shutdown(wait=False)
        if self.pool is not None:
            self.pool.close()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kjudge.integrations.openrlhf", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8490)
    ap.add_argument("--path", default="/reward", help="the URL path OpenRLHF posts to")
    ap.add_argument("--redis", default=None, help="the queue (unix://, redis://, redis+sentinel://) or a kjudge-gateway "
                                                  "http(s):// URL; default $KJUDGE_REDIS or the dev daemon's")
    ap.add_argument("--problems", default=None, help="a KernelBench dataset folder: labels may be its problem ids")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--mode", default="strict")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--reward-policy", default=None)
    ap.add_argument("--deadline-s", type=float, default=170.0)
    ap.add_argument("--unscored", type=float, default=0.0)
    a = ap.parse_args(argv)
    problems = {}
    if a.problems:
        from kjudge.integrations.dataset import kernelbench_rows
        problems = {r["problem_id"]: r["reference"] for r in kernelbench_rows(Path(a.problems))}
    server = KjudgeRewardServer((a.host, a.port), redis_url=a.redis, problems=problems, unscored=a.unscored,
                                deadline_s=a.deadline_s, path=a.path, backend=a.backend, mode=a.mode, trials=a.trials,
                                reward_policy=a.reward_policy)
    print("kjudge reward server for OpenRLHF on http://%s:%d%s (%d problems)" % (a.host, server.server_port, a.path,
                                                                                 len(problems)), file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
