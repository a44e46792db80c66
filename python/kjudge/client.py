"""The kjudge queue client for trainers and evaluators (design §8).

Jobs go in through the server-side function ``kj_submit`` (queue/lua/kjudge.lua), the same one
libkjqueue calls, so Python and C++ clients agree on key names (kjudge.keys mirrors
queue/src/keys.cpp), idempotency and tenant registration. Results are read from their own keys;
waiting uses the tenant's completion stream without a race between "is it there?" and "block".

    from kjudge.client import Client
    from kjudge.v1 import job_pb2

    c = Client("unix:///run/kjudge/redis.sock")
    entry_id, duplicate = c.submit(job_pb2.Job(job_id="step7-cand12", tenant="team-a", ...))
    result = c.wait("team-a", "step7-cand12", timeout_s=600)   # kjudge.v1.Result or None
"""

import pathlib
import time
import urllib.parse

import redis
from google.protobuf.message import DecodeError

from kjudge import ha, keys
from kjudge.turns import turn_tally
from kjudge.v1 import job_pb2, result_pb2

LIBRARY = "kjudge"
# The source tree's copy; kjudged loads the same file (embedded at build time).
LUA_PATH = pathlib.Path(__file__).resolve().parents[2] / "queue" / "lua" / "kjudge.lua"

_WAIT_BATCH = 1000  # completion events read per XREAD
_PIPELINE_CHUNK = 1000  # submissions per round trip in submit_many


class QueueError(Exception):
    """Redis said no, the connection broke, or a name is invalid. The message is readable."""


class QueueFull(QueueError):
    """kj_submit refused the job: the tenant's quota of jobs waiting for a result is reached."""


def _connect(url: str, connect_timeout_s: float) -> redis.Redis:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "unix":
        if not parsed.path.startswith("/"):
            raise QueueError("redis url %r: unix:// needs an absolute socket path" % url)
        return redis.Redis(unix_socket_path=parsed.path, socket_connect_timeout=connect_timeout_s)
    if parsed.scheme in ("redis", "tcp"):
        if parsed.scheme == "tcp":
            url = "redis://" + url[len("tcp://"):]
        return redis.Redis.from_url(url, socket_connect_timeout=connect_timeout_s)
    if url.startswith(ha.SCHEME):
        try:
            return ha.connect(url, connect_timeout_s)
        except ValueError as e:
            raise QueueError(str(e)) from e
    raise QueueError("redis url %r: unsupported scheme (use unix://, tcp://, redis:// or redis+sentinel://)" % url)


def server_message(error: redis.ResponseError) -> str:
    """Redis's own error text: redis-py puts "Command # N (...) of pipeline caused error: " before
    the reply of a command sent in a pipeline (submit's write and its WAIT go as one)."""
    return str(error).rpartition(" of pipeline caused error: ")[2]


def completion_counts(rc: redis.Redis, tenant: str, partition: int = 0) -> dict:
    """job id -> completion events on the tenant's done stream (a Redis connection): more than one
    for a job is a duplicate delivery, what the exactly-once checks of the fault and cluster tests
    and deploy/cluster/load.py count."""
    counts = {}
    for _id, fields in rc.xrange(keys.done(partition, tenant), "-", "+"):
        jid = fields.get(b"id")
        if jid:
            counts[jid.decode()] = counts.get(jid.decode(), 0) + 1
    return counts


def _check_names(tenant: str, job_id: str) -> None:
    if not keys.valid_tenant(tenant):
        raise QueueError("invalid tenant %r (want [a-z0-9_-]{1,64})" % (tenant,))
    if not keys.valid_job_id(job_id):
        raise QueueError("invalid job id %r (want [A-Za-z0-9._:-]{1,128})" % (job_id,))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _parse_result(raw):
    if raw is None:
        return None
    try:
        return result_pb2.Result.FromString(raw)
    except DecodeError as e:
        raise QueueError("stored result is not a kjudge.v1.Result: %s" % e) from e


class Client:
    """One Redis connection pool. Thread-safe as redis-py is (one pool, many threads).

    With a ``redis+sentinel://`` URL the client follows failovers (every call retries for up to
    failover_wait_s while the new primary is found) and a submission returns only once
    ``replica_acks`` replicas hold it (default 1; 0 for other URLs)."""

    def __init__(self, url: str, *, connect_timeout_s: float = 2.0, replica_acks: int = None,
                 failover_wait_s: float = None):
        self.url = url
        self._redis = _connect(url, connect_timeout_s)
        sentinel = url.startswith(ha.SCHEME)
        self._acks = (1 if sentinel else 0) if replica_acks is None else int(replica_acks)
        self._failover_wait = (ha.FAILOVER_WAIT_S if sentinel else 0.0) if failover_wait_s is None else failover_wait_s

    @property
    def redis(self) -> redis.Redis:
        """The underlying redis-py client, for tools and tests."""
        return self._redis

    def _call(self, fn, *args, **kwargs):
        try:
            return ha.retrying(lambda: fn(*args, **kwargs), self._failover_wait)
        except redis.ResponseError as e:
            message = server_message(e)
            if message.startswith("QUEUEFULL"):
                raise QueueFull(message[len("QUEUEFULL "):]) from e
            if "Function not found" in message:
                raise QueueError(
                    "the kjudge functions are not loaded in Redis at %s: start kjudged "
                    "(it loads them) or call Client.load_functions()" % self.url) from e
            raise QueueError("redis %s: %s" % (self.url, e)) from e
        except redis.RedisError as e:
            raise QueueError("redis %s: %s" % (self.url, e)) from e

    # -- functions ---------------------------------------------------------------------------

    def functions_loaded(self) -> bool:
        return bool(self._call(self._redis.execute_command, "FUNCTION", "LIST", "LIBRARYNAME", LIBRARY))

    def load_functions(self, replace: bool = False, path: pathlib.Path = LUA_PATH) -> bool:
        """Loads queue/lua/kjudge.lua from the source tree unless the library is there already
        (or always, with replace=True). Returns whether it loaded."""
        if not replace and self.functions_loaded():
            return False
        try:
            code = pathlib.Path(path).read_text()
        except OSError as e:
            raise QueueError("cannot read the kjudge function library %s: %s" % (path, e)) from e
        self._call(self._redis.execute_command, "FUNCTION", "LOAD", "REPLACE", code)
        return True

    # -- submitting --------------------------------------------------------------------------

    @staticmethod
    def _submit_args(job: job_pb2.Job, partition: int, batch_size: int = 0):
        if not isinstance(job, job_pb2.Job):
            raise QueueError("submit wants a kjudge.v1.job_pb2.Job, got %s" % type(job).__name__)
        tenant, job_id, batch_id = job.tenant, job.job_id, job.batch_id
        _check_names(tenant, job_id)
        if batch_id and not keys.valid_job_id(batch_id):
            raise QueueError("invalid batch id %r (want [A-Za-z0-9._:-]{1,128})" % (batch_id,))
        # shared keys (tenant set, quotas) go in ARGV: a tenant ACL user may only read them
        ks = [keys.jobs(partition, tenant, keys.lane_of_priority(job.priority)), keys.job_marker(partition, tenant, job_id), keys.queued(partition, tenant)]
        if batch_id:
            ks.append(keys.batch(partition, tenant, batch_id))
        return ("kj_submit", len(ks), *ks,
                job_id, job.SerializeToString(), tenant, keys.tenants(partition), keys.quotas(partition),
                batch_id, int(batch_size))

    def submit(self, job: job_pb2.Job, partition: int = 0, batch_size: int = 0):
        """Enqueues one job. Idempotent by (tenant, job_id): a repeated submission returns the
        first one's stream entry id and duplicate=True. Returns (entry_id, duplicate).
        Raises QueueFull when the tenant's quota is reached. A job with a batch_id counts in its
        batch; batch_size (optional) tells the batch how many jobs it will have."""
        args = self._submit_args(job, partition, batch_size)

        def once():
            # one connection for the write and its WAIT (a pipeline); kj_submit writes even for a
            # duplicate, so the WAIT covers the first submission too
            pipe = self._redis.pipeline(transaction=False)
            pipe.fcall(*args)
            ha.wait_replicas(pipe, self._acks)
            replies = pipe.execute()
            if self._acks > 0:
                ha.check_acks(replies[1], self._acks)
            return replies[0]

        entry_id, duplicate = self._call(once)
        return _text(entry_id), bool(duplicate)

    def submit_many(self, jobs, partition: int = 0, batch_size: int = 0, return_errors: bool = False):
        """submit() for many jobs, pipelined (one round trip per 1000 jobs). Every job is
        validated before anything is sent. Returns [(entry_id, duplicate), ...] in order.
        A job refused by its quota raises QueueFull (the ones before it are queued); with
        return_errors, a refused job's place holds its QueueFull (or QueueError) instead and the
        others are as if each had been submitted alone (a failed round trip still raises)."""
        calls = [self._submit_args(job, partition, batch_size) for job in jobs]
        out = []
        for start in range(0, len(calls), _PIPELINE_CHUNK):
            chunk = calls[start:start + _PIPELINE_CHUNK]

            def once(chunk=chunk):
                pipe = self._redis.pipeline(transaction=False)
                for args in chunk:
                    pipe.fcall(*args)
                ha.wait_replicas(pipe, self._acks)  # one WAIT covers the chunk's writes
                got = pipe.execute(raise_on_error=False)
                if self._acks > 0:
                    if isinstance(got[-1], Exception):
                        raise got[-1]
                    ha.check_acks(got.pop(), self._acks)
                return got

            for r in self._call(once):
                if isinstance(r, redis.ResponseError):
                    err = (QueueFull(str(r)[len("QUEUEFULL "):]) if str(r).startswith("QUEUEFULL")
                           else QueueError("redis %s: %s" % (self.url, r)))
                    if not return_errors:
                        raise err
                    out.append(err)
                else:
                    out.append((_text(r[0]), bool(r[1])))
        return out

    # -- cancel, batches ---------------------------------------------------------------------

    _CANCEL_TTL_S = 7 * 24 * 3600

    def cancel(self, tenant: str, job_id: str, partition: int = 0):
        """Cancels a job: not yet started -> it never runs; running -> its result becomes CANCELLED.
        Either way its result is CANCELLED (unless it was done already)."""
        _check_names(tenant, job_id)
        self._call(self._redis.fcall, "kj_cancel", 1, keys.cancel(partition, tenant, job_id), self._CANCEL_TTL_S)

    def cancel_batch(self, tenant: str, batch_id: str, partition: int = 0):
        """cancel() for every job of a batch (present and future submissions)."""
        _check_names(tenant, batch_id)
        self._call(self._redis.fcall, "kj_cancel", 1, keys.batch_cancel(partition, tenant, batch_id), self._CANCEL_TTL_S)

    def batch_status(self, tenant: str, batch_id: str, partition: int = 0):
        """{'submitted', 'completed', 'expected', 'verdicts': {name: n}, 'cancelled', 'turns'}; turns:
        the repair-turn tally of the jobs that named their group (kjudge.turns): {'groups',
        'solved_first_turn', 'solved', 'last_turn', 'first_turn', 'best_of_turns'} (rates None
        without groups), as `kjudge batch --json` and the gateway give it."""
        _check_names(tenant, batch_id)
        raw = self._call(self._redis.hgetall, keys.batch(partition, tenant, batch_id))
        out = {"submitted": 0, "completed": 0, "expected": 0, "verdicts": {}}
        tally = dict.fromkeys(("groups", "solved_first", "solved", "last"), 0)
        for k, v in raw.items():
            k = _text(k)
            if k.startswith("verdict:"):
                out["verdicts"][k[len("verdict:"):]] = int(v)
            elif k.startswith("turns:") and k[len("turns:"):] in tally:
                tally[k[len("turns:"):]] = int(v)
            elif k in out:
                out[k] = int(v)
        out["cancelled"] = bool(self._call(self._redis.exists, keys.batch_cancel(partition, tenant, batch_id)))
        out["turns"] = turn_tally(tally["groups"], tally["solved_first"], tally["solved"], tally["last"])
        return out

    def wait_batch(self, tenant: str, batch_id: str, timeout_s: float, partition: int = 0) -> bool:
        """Blocks until the batch's batch_done event (or its counters show it complete). True when done."""
        _check_names(tenant, batch_id)
        deadline = time.monotonic() + max(0.0, timeout_s)
        done = keys.done(partition, tenant)
        newest = self._call(self._redis.xrevrange, done, "+", "-", count=1)
        last = newest[0][0] if newest else b"0-0"
        while True:
            st = self.batch_status(tenant, batch_id, partition)
            if st["submitted"] and st["completed"] >= max(st["submitted"], st["expected"]):
                return True
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                return False
            reply = self._call(self._redis.xread, {done: last}, count=_WAIT_BATCH, block=min(left_ms, 1000))
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    last = entry_id
                    if fields and _text(fields.get(b"batch", b"")) == batch_id and fields.get(b"event") == b"batch_done":
                        return True

    # -- results -----------------------------------------------------------------------------

    def get_result(self, tenant: str, job_id: str, partition: int = 0):
        """The job's kjudge.v1.Result, or None while there is none (or after it expired)."""
        _check_names(tenant, job_id)
        return _parse_result(self._call(self._redis.get, keys.result(partition, tenant, job_id)))

    def wait(self, tenant: str, job_id: str, timeout_s: float, partition: int = 0):
        """Blocks until the job's result exists or timeout_s passes; Result or None."""
        return self.wait_many(tenant, [job_id], timeout_s, partition)[job_id]

    def wait_many(self, tenant: str, job_ids, timeout_s: float, partition: int = 0):
        """Waits for several jobs of one tenant at once (a trainer's batch). Returns
        {job_id: Result or None}; None for those not done within timeout_s."""
        job_ids = list(dict.fromkeys(job_ids))
        for job_id in job_ids:
            _check_names(tenant, job_id)
        deadline = time.monotonic() + max(0.0, timeout_s)
        done = keys.done(partition, tenant)

        # Note the last completion event *before* looking at the results: kj_complete stores a
        # result and appends its event atomically, so anything completed after our look has an
        # event after `last`, and the XREAD below sees it.
        newest = self._call(self._redis.xrevrange, done, "+", "-", count=1)
        last = newest[0][0] if newest else b"0-0"
        out = {}
        missing = self._fetch(tenant, job_ids, partition, out)

        while missing:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                break
            # block=0 would mean "forever"; left_ms >= 1 here
            reply = self._call(self._redis.xread, {done: last}, count=_WAIT_BATCH, block=left_ms)
            if not reply:
                break  # timed out
            finished = []
            for _stream, entries in reply:
                for entry_id, fields in entries:
                    last = entry_id
                    jid = _text(fields.get(b"id", b"")) if fields else ""
                    if jid in missing:
                        finished.append(jid)
            if finished:
                # done: the result is there now (or already expired again: None)
                self._fetch(tenant, finished, partition, out)
                missing -= set(finished)
        return out

    def _fetch(self, tenant, job_ids, partition, out):
        """GETs results into `out`; returns the set of job ids that have none."""
        raws = self._call(self._redis.mget, [keys.result(partition, tenant, j) for j in job_ids])
        missing = set()
        for job_id, raw in zip(job_ids, raws):
            out[job_id] = _parse_result(raw)
            if raw is None:
                missing.add(job_id)
        return missing
