"""The kjudge client over kjudge-gateway's HTTP API (docs/gateway.md), for tenants without Redis
credentials. The same methods and results as kjudge.client.Client; the tenant is the token's.

    from kjudge.gateway_client import GatewayClient
    c = GatewayClient("https://kjudge.example.org", token="kjt_...")   # or $KJUDGE_TOKEN
    c.submit(job)                       # (entry_id, duplicate)
    c.wait("team-a", job.job_id, 600)   # kjudge.v1.Result or None

Bodies are binary protobuf (the queue's own Job and Result). A request whose reply was lost (the
gateway restarted, the network broke) is sent again: job ids make submission idempotent.
"""

import http.client
import json
import os
import ssl
import threading
import time
import urllib.parse

from kjudge.client import QueueError, QueueFull
from kjudge.turns import turn_tally
from kjudge.v1 import gateway_pb2, job_pb2, result_pb2

_PROTOBUF = "application/x-protobuf"
_BATCH_CHUNK = 1000  # jobs per POST /v1/batches (the gateway's default max_batch_jobs)
_RETRIES = 20        # connection failures retried per request (0.1 s apart, growing to 1 s)
_LONG_POLL_S = 60    # one /wait request at most (the gateway caps it at its max_wait_s)


class GatewayError(QueueError):
    """The gateway refused a request (4xx/5xx): .status, .code and the message it gave."""

    def __init__(self, status, code, message):
        super().__init__("gateway: %s %s: %s" % (status, code, message))
        self.status, self.code = status, code


class GatewayClient:
    """One keep-alive connection per thread. Thread-safe."""

    def __init__(self, url: str, token: str = None, *, timeout_s: float = 90.0, ssl_context=None):
        """ssl_context: for https, an ssl.SSLContext (default: the system's CAs; a private CA:
        ssl.create_default_context(cafile=...))."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise QueueError("gateway url %r: want http(s)://host[:port]" % url)
        self.url = url
        self._parsed = parsed
        self._token = token or os.environ.get("KJUDGE_TOKEN", "")
        if not self._token:
            raise QueueError("a gateway needs an API token: pass token= or set KJUDGE_TOKEN (kjudge admin token create)")
        self._timeout_s = timeout_s
        self._ssl_context = ssl_context
        self._local = threading.local()

    # -- transport ---------------------------------------------------------------------------

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._parsed.scheme == "https":
                conn = http.client.HTTPSConnection(self._parsed.hostname, self._parsed.port, timeout=self._timeout_s,
                                                   context=self._ssl_context)
            else:
                conn = http.client.HTTPConnection(self._parsed.hostname, self._parsed.port, timeout=self._timeout_s)
            self._local.conn = conn
        return conn

    def _drop_connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def request(self, method, path, body=None, content_type=_PROTOBUF):
        """(status, content_type, body bytes); retries when the connection fails, raises GatewayError on >= 400."""
        headers = {"Authorization": "Bearer " + self._token, "Accept": _PROTOBUF}
        if body is not None:
            headers["Content-Type"] = content_type
        for attempt in range(_RETRIES + 1):
            try:
                conn = self._connection()
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    self._drop_connection()
                break
            except ssl.SSLCertVerificationError as e:  # not the gateway's restart: resending cannot help
                self._drop_connection()
                raise QueueError("gateway %s: %s" % (self.url, e)) from e
            except (OSError, http.client.HTTPException) as e:
                self._drop_connection()
                if attempt == _RETRIES:
                    raise QueueError("gateway %s: %s" % (self.url, e)) from e
                time.sleep(min(1.0, 0.1 * (attempt + 1)))
        if resp.status == 503 and b"too_many_connections" in data and attempt < _RETRIES:
            time.sleep(0.1)
            return self.request(method, path, body, content_type)
        if resp.status >= 400:
            _raise_for(resp.status, data)
        return resp.status, resp.getheader("Content-Type", ""), data

    # -- submitting --------------------------------------------------------------------------

    def submit(self, job: job_pb2.Job, partition: int = 0, batch_size: int = 0):
        """Enqueues one job; (entry_id, duplicate). Raises QueueFull when the tenant is at its quota."""
        _check_partition(partition)
        if batch_size and job.batch_id:
            return self._submit_batch(job.batch_id, [job], batch_size)[0]
        _, _, data = self.request("POST", "/v1/jobs", job.SerializeToString())
        reply = json.loads(data)
        return reply["entry_id"], bool(reply["duplicate"])

    def submit_many(self, jobs, partition: int = 0, batch_size: int = 0):
        """submit() for many jobs: one request per job, jobs of one batch in POST /v1/batches chunks."""
        _check_partition(partition)
        jobs = list(jobs)
        out = [None] * len(jobs)
        by_batch = {}
        for i, job in enumerate(jobs):
            if job.batch_id:
                by_batch.setdefault(job.batch_id, []).append(i)
            else:
                out[i] = self.submit(job)
        for batch_id, idx in by_batch.items():
            for start in range(0, len(idx), _BATCH_CHUNK):
                chunk = idx[start:start + _BATCH_CHUNK]
                replies = self._submit_batch(batch_id, [jobs[i] for i in chunk], batch_size or len(idx))
                for i, r in zip(chunk, replies):
                    out[i] = r
        return out

    def _submit_batch(self, batch_id, jobs, expected):
        body = gateway_pb2.SubmitBatch(batch_id=batch_id, expected=expected, jobs=jobs).SerializeToString()
        _, _, data = self.request("POST", "/v1/batches", body)
        return [(j["entry_id"], bool(j["duplicate"])) for j in json.loads(data)["jobs"]]

    # -- cancel, batches ---------------------------------------------------------------------

    def cancel(self, tenant: str, job_id: str, partition: int = 0):
        _check_partition(partition)
        self.request("DELETE", "/v1/jobs/" + urllib.parse.quote(job_id))

    def cancel_batch(self, tenant: str, batch_id: str, partition: int = 0):
        _check_partition(partition)
        self.request("DELETE", "/v1/batches/" + urllib.parse.quote(batch_id))

    def batch_status(self, tenant: str, batch_id: str, partition: int = 0):
        """{'submitted', 'completed', 'expected', 'verdicts': {name: n}, 'cancelled', 'turns'} (zeros
        when unknown), as Client.batch_status"""
        _check_partition(partition)
        try:
            _, _, data = self.request("GET", "/v1/batches/" + urllib.parse.quote(batch_id))
        except GatewayError as e:
            if e.status == 404:
                return {"submitted": 0, "completed": 0, "expected": 0, "verdicts": {}, "cancelled": False,
                        "turns": turn_tally(0, 0, 0, 0)}
            raise
        reply = json.loads(data)
        return {k: reply[k] for k in ("submitted", "completed", "expected", "verdicts", "cancelled", "turns")}

    def wait_batch(self, tenant: str, batch_id: str, timeout_s: float, partition: int = 0) -> bool:
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            st = self.batch_status(tenant, batch_id, partition)
            if st["submitted"] and st["completed"] >= max(st["submitted"], st["expected"]):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    # -- results -----------------------------------------------------------------------------

    def get_result(self, tenant: str, job_id: str, partition: int = 0):
        _check_partition(partition)
        return self._result("/v1/jobs/" + urllib.parse.quote(job_id))

    def wait(self, tenant: str, job_id: str, timeout_s: float, partition: int = 0):
        """Long-polls until the job's result exists or timeout_s passes; Result or None."""
        _check_partition(partition)
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self.get_result(tenant, job_id)
            path = "/v1/jobs/%s/wait?timeout_s=%.3f" % (urllib.parse.quote(job_id), min(left, _LONG_POLL_S))
            result = self._result(path)
            if result is not None:
                return result

    def wait_many(self, tenant: str, job_ids, timeout_s: float, partition: int = 0):
        """{job_id: Result or None}, waiting for each in turn within one deadline."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        return {j: self.wait(tenant, j, max(0.0, deadline - time.monotonic()), partition)
                for j in dict.fromkeys(job_ids)}

    def _result(self, path):
        try:
            status, _, data = self.request("GET", path)
        except GatewayError as e:
            if e.status == 404:
                return None  # unknown job (or expired)
            raise
        if status != 200:
            return None  # 202: pending
        r = result_pb2.Result()
        r.ParseFromString(data)
        return r


def _raise_for(status, data):
    try:
        err = json.loads(data)["error"]
        code, message = err.get("code", ""), err.get("message", "")
    except (ValueError, KeyError, TypeError):
        code, message = "", data[:200].decode("utf-8", "replace")
    if code in ("over_quota", "queue_full"):
        raise QueueFull(message)
    raise GatewayError(status, code, message)


def _check_partition(partition):
    if partition:
        raise QueueError("the gateway serves its own partition; partition=%r is for direct Redis clients" % partition)


def is_gateway_url(url: str) -> bool:
    return url.startswith("http://") or url.startswith("https://")
