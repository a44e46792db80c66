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
and the gateway checks it. No token, or an unknown one: 401.

Not scored is not the candidate's: OpenRLHF needs a number for every sample, so a query the judge
did not score (an infrastructure fault, a bad reference, no verdict by --deadline-s) gets
--unscored (default 0.0) with extra_logs kjudge_scored 0 and kjudge_infra_error 1, which OpenRLHF
averages into its logged metrics; the verdicts are in the reply's "verdicts". --deadline-s
(default 170) stays under OpenRLHF's own 180 s request timeout: past it the jobs are cancelled.

Retries are idempotent: a job's id is a hash of the tenant, the query, its prompt and label and
its place in the request, so OpenRLHF posting a request again (its client retries on a timeout or
a broken connection) waits for the jobs of the first post instead of queueing new ones. The same
query posted again while its result is kept (1 h) gets that result."""

import argparse
import base64
import hashlib
import json
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kjudge import keys
from kjudge.client import QueueError
from kjudge.gateway_client import GatewayClient, GatewayError, is_gateway_url
from kjudge.integrations.pool import JudgePool
from kjudge.jobs import build_job
from kjudge.reward import JOB_OPTIONS, not_judged, score_result

_NOT_FROM_LABEL = ("tenant", "job_id", "meta")
_MAX_BODY = 64 * 1024 * 1024


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


class KjudgeRewardServer(ThreadingHTTPServer):
    """The server; serve_forever() runs it (threads: one per request). `judged` counts the jobs."""

    daemon_threads = True
    # a rollout posts every sample of a step at once (hundreds of connections): socketserver's
    # backlog of 5 made the kernel reset most of them (bench/trainers/overhead.py, 256 at once)
    request_queue_size = 4096

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
        self.history = deque(maxlen=4096)  # the latest queries' details (job_id, verdict, score, response)
        super().__init__(address, _Handler)

    # -- authentication ---------------------------------------------------------------------

    def tenant_of(self, token):
        """The token's tenant (Redis mode), or None."""
        if not token:
            return None
        r = self.pool.client
        raw = r._call(r.redis.hget, keys.tokens(self.partition), hashlib.sha256(token.encode()).hexdigest())
        return raw.decode() if isinstance(raw, bytes) else raw

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

    def score(self, queries, prompts, labels, *, tenant=None, token=None):
        """(rewards, details) for a request's queries; details: one reward dict per query
        (kjudge.reward's, plus job_id)."""
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
        results = [None] * len(jobs)
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
            for i, _job in jobs:
                details[i] = not_judged("QUEUE_ERROR", str(e), on_error="none")
        else:
            for (i, job), result in zip(jobs, results):
                details[i] = score_result(result, on_error="none")
        for (i, job) in jobs:
            details[i]["job_id"] = job.job_id
        with self._lock:
            self.judged += len(jobs)
            for d, query, prompt in zip(details, queries, prompts):
                self.history.append(dict(d, response=response_of(query, prompt)))
        rewards = [float(d["score"]) if d["scored"] else self.unscored for d in details]
        return rewards, details


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KjudgeRewardServer

    def log_message(self, fmt, *args):  # quiet: a step is hundreds of requests
        pass

    def _reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="kjudge", Basic realm="kjudge"')
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the trainer gave up on this request (its timeout); a retry waits for the same jobs

    def _token(self):
        auth = self.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
        if scheme.lower() == "basic":
            try:
                return base64.b64decode(value.strip()).decode().partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return ""
        return ""

    def do_GET(self):
        if self.path in ("/livez", "/readyz"):
            return self._reply(200, {"ok": True})
        return self._reply(404, {"error": "not_found"})

    def do_POST(self):
        start = time.monotonic()
        if self.path.split("?")[0] != self.server.path:
            return self._reply(404, {"error": "not_found", "message": "POST %s" % self.server.path})
        token = self._token()
        tenant = None
        if not self.server.over_gateway:
            try:
                tenant = self.server.tenant_of(token)
            except QueueError as e:
                return self._reply(503, {"error": "queue_unavailable", "message": str(e)})
            if not tenant:
                return self._reply(401, {"error": "unauthorized", "message": "no token, or an unknown or revoked one"})
        elif not token:
            return self._reply(401, {"error": "unauthorized", "message": "no token"})
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > _MAX_BODY:
            return self._reply(400, {"error": "bad_request", "message": "a JSON body of at most 64 MiB"})
        try:
            data = json.loads(self.rfile.read(length))
            queries = data["query"]
            queries = [queries] if isinstance(queries, str) else list(queries)
            prompts = data.get("prompts") or [""] * len(queries)
            labels = data.get("labels") or [None] * len(queries)
            if not (len(queries) == len(prompts) == len(labels)) or not all(isinstance(q, str) for q in queries):
                raise ValueError("query, prompts and labels: lists of one length, queries text")
            if any(l is None for l in labels):
                raise ValueError("every query needs its label (the problem's reference or id)")
        except (ValueError, KeyError, TypeError) as e:
            return self._reply(400, {"error": "bad_request", "message": str(e)})
        try:
            rewards, details = self.server.score(queries, prompts, labels, tenant=tenant, token=token)
        except GatewayError as e:
            return self._reply(e.status, {"error": e.code, "message": str(e)})
        scored = [1.0 if d["scored"] else 0.0 for d in details]
        self._reply(200, {
            "rewards": rewards, "scores": rewards,
            "extra_logs": {"kjudge_scored": scored,
                           "kjudge_infra_error": [1.0 if d["infra_error"] else 0.0 for d in details],
                           "kjudge_speedup": [float(d["speedup"] or 0.0) for d in details]},
            "verdicts": [d["verdict"] for d in details], "job_ids": [d.get("job_id") for d in details],
            "policy": [d["policy"] for d in details], "wall_s": time.monotonic() - start})


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
    server.serve_forever()


if __name__ == "__main__":
    main()
