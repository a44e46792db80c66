"""judge() and judge_many(): submit KernelBench-format jobs through the queue and wait for their
verdicts, in one call. The sync functions are thread-safe (each call has its own state; the
Redis connection pool is shared per URL); judge_many_async runs the same loop in a worker thread
so an event loop is never blocked, and cancelling the coroutine cancels the jobs.

Jobs still without a result when timeout_s runs out are cancelled in the queue (so they do not
hold a slot for an answer nobody reads) and come back as None."""

import asyncio
import threading
import time

from kjudge.client import Client, QueueError
from kjudge.gateway_client import GatewayClient, is_gateway_url
from kjudge.jobs import build_job, default_redis_url
from kjudge.v1 import job_pb2, verdict_pb2

_POLL_S = 0.5  # longest wait between progress reports / stop checks
_clients = {}
_clients_lock = threading.Lock()


class JudgeTimeout(Exception):
    """judge() gave up on its job (it was cancelled in the queue). The judge's fault or load,
    never the candidate's: kjudge.reward treats it as an infrastructure error."""


def verdict_name(result) -> str:
    """"OK", "INCORRECT", ... of a kjudge.v1.Result."""
    return verdict_pb2.Verdict.Name(result.status)


def client_for(redis_url=None):
    """One client per URL, shared by every thread: a kjudge-gateway's for http(s):// (the token from
    $KJUDGE_TOKEN), else a Redis connection pool."""
    url = redis_url or default_redis_url()
    with _clients_lock:
        if url not in _clients:
            _clients[url] = GatewayClient(url) if is_gateway_url(url) else Client(url)
        return _clients[url]


def _as_job(item, common):
    if isinstance(item, job_pb2.Job):
        return item
    if isinstance(item, dict):
        kwargs = dict(common)
        kwargs.update(item)
        return build_job(kwargs.pop("reference"), **kwargs)
    raise TypeError("judge_many wants kjudge.v1.Job messages or dicts of build_job arguments, got %s"
                    % type(item).__name__)


def judge_many(items, *, redis_url=None, client=None, timeout_s=900.0, progress=None, stop=None,
               partition=0, **common):
    """Judges many jobs; returns their kjudge.v1.Result in order, None for those given up on.

    items: kjudge.v1.Job messages, or dicts of build_job() arguments (`common` fills in what a
    dict leaves out, e.g. backend="cpu", mode="compat"). All jobs must share one tenant.
    progress(done, total, job_id, result) is called once per finished job (result None when
    given up on), from the thread running the wait. stop: a threading.Event that ends the wait early
    (the unfinished jobs are cancelled)."""
    jobs = [_as_job(item, common) for item in items]
    if not jobs:
        return []
    tenants = {j.tenant for j in jobs}
    if len(tenants) != 1:
        raise ValueError("judge_many: all jobs must have the same tenant, got %s" % sorted(tenants))
    tenant = tenants.pop()
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("judge_many: job ids must be unique")
    client = client or client_for(redis_url)
    try:
        client.submit_many(jobs, partition)
    except QueueError:
        # e.g. QueueFull part way: the jobs already queued would run for nobody
        for job_id in ids:
            try:
                client.cancel(tenant, job_id, partition)
            except QueueError:
                break  # the connection is gone: nothing more to do
        raise
    results = {}
    missing = list(ids)
    deadline = time.monotonic() + timeout_s
    try:
        while missing:
            left = deadline - time.monotonic()
            if left <= 0 or (stop is not None and stop.is_set()):
                break
            got = client.wait_many(tenant, missing, min(_POLL_S, left), partition)
            finished = [j for j in missing if got.get(j) is not None]
            for job_id in finished:
                results[job_id] = got[job_id]
                if progress:
                    progress(len(results), len(ids), job_id, got[job_id])
            if finished:
                missing = [j for j in missing if j not in results]
    finally:
        # give up on the rest: cancel them, so they never run or stop running
        for job_id in missing:
            client.cancel(tenant, job_id, partition)
    for n, job_id in enumerate(missing, len(results) + 1):
        if progress:
            progress(n, len(ids), job_id, None)
    return [results.get(j) for j in ids]


async def judge_many_async(items, **kwargs):
    """judge_many() for asyncio code: runs in a worker thread; cancelling this coroutine stops
    the wait and cancels the unfinished jobs in the queue."""
    stop = threading.Event()
    fut = asyncio.get_running_loop().run_in_executor(None, lambda: judge_many(items, stop=stop, **kwargs))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait([fut])  # let it cancel its jobs before we report cancelled
        raise


def judge(reference, *, completion=None, candidate=None, redis_url=None, client=None, timeout_s=900.0,
          partition=0, **job_options):
    """Judges one candidate; returns its kjudge.v1.Result. Raises JudgeTimeout (after cancelling
    the job) when no verdict came within timeout_s. job_options go to build_job()."""
    job = build_job(reference, completion=completion, candidate=candidate, **job_options)
    result = judge_many([job], redis_url=redis_url, client=client, timeout_s=timeout_s, partition=partition)[0]
    if result is None:
        raise JudgeTimeout("no verdict for job %s within %.0f s (cancelled)" % (job.job_id, timeout_s))
    return result


async def judge_async(reference, *, completion=None, candidate=None, timeout_s=900.0, **kwargs):
    """judge() for asyncio code; cancelling it cancels the job."""
    conn = {k: kwargs.pop(k) for k in ("redis_url", "client", "partition") if k in kwargs}
    job = build_job(reference, completion=completion, candidate=candidate, **kwargs)
    result = (await judge_many_async([job], timeout_s=timeout_s, **conn))[0]
    if result is None:
        raise JudgeTimeout("no verdict for job %s within %.0f s (cancelled)" % (job.job_id, timeout_s))
    return result
