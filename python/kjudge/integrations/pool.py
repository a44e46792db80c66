"""Many concurrent callers, one waiter: for trainers that ask for rewards one sample at a time,
concurrently (veRL's reward loop awaits compute_score per sample; OpenRLHF posts one query per
request). judge_many in a thread per caller would hold a thread per sample and wake every thread
on every verdict; JudgePool submits each caller's jobs at once and has one thread per tenant read
the queue's completion stream, handing each verdict to the caller that waits for it.

    pool = JudgePool(redis_url)
    results = pool.judge(jobs, timeout_s=600)            # blocking; thread-safe
    results = await pool.judge_async(jobs, timeout_s=600)  # no thread held while it waits

Jobs without a verdict at timeout_s are cancelled in the queue and come back as None (as
judge_many's). Redis URLs only; for a kjudge-gateway URL judge() falls back to judge_many."""

import asyncio
import concurrent.futures
import threading
import time

from kjudge import keys
from kjudge.client import QueueError, _parse_result, _text
from kjudge.judging import client_for, judge_many

_BLOCK_MS = 200       # one XREAD's longest block: how soon an idle waiter notices it should stop
_RESCAN_S = 2.0       # every so often the waiter GETs every awaited result (a trimmed stream loses nothing)
_IDLE_EXIT_S = 30.0   # a tenant's waiter thread ends after this long with nothing to wait for


class _TenantWaiter:
    def __init__(self, pool, tenant):
        self.pool, self.tenant = pool, tenant
        self.waiting = {}                      # job_id -> [concurrent.futures.Future]: its callers
        self.lock = threading.Lock()
        self.thread = None
        self.cursor = None

    def add(self, job_ids):
        futures = [concurrent.futures.Future() for _ in job_ids]
        with self.lock:
            for job_id, fut in zip(job_ids, futures):
                self.waiting.setdefault(job_id, []).append(fut)
            if self.thread is None:
                # the cursor is taken before any of these jobs can finish (they are not submitted yet)
                self.cursor = self._newest()
                self.thread = threading.Thread(target=self._run, name="kjudge-pool-" + self.tenant, daemon=True)
                self.thread.start()
        return futures

    def drop(self, job_ids, futures):
        with self.lock:
            for job_id, fut in zip(job_ids, futures):
                waiting = self.waiting.get(job_id, [])
                if fut in waiting:
                    waiting.remove(fut)
                if not waiting:
                    self.waiting.pop(job_id, None)

    def _newest(self):
        c = self.pool.client
        newest = c._call(c.redis.xrevrange, keys.done(self.pool.partition, self.tenant), "+", "-", count=1)
        return newest[0][0] if newest else b"0-0"

    def _resolve(self, job_ids):
        c, p = self.pool.client, self.pool.partition
        raws = c._call(c.redis.mget, [keys.result(p, self.tenant, j) for j in job_ids])
        for job_id, raw in zip(job_ids, raws):
            if raw is None:
                continue
            with self.lock:
                futures = self.waiting.pop(job_id, [])
            result = _parse_result(raw)
            for fut in futures:
                if not fut.done():
                    fut.set_result(result)

    def _run(self):
        c, p = self.pool.client, self.pool.partition
        done = keys.done(p, self.tenant)
        idle_since, last_scan = None, time.monotonic()
        while True:
            with self.lock:
                ids = set(self.waiting)
                if not ids:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > _IDLE_EXIT_S or self.pool.closed:
                        self.thread = None
                        return
                else:
                    idle_since = None
            try:
                if ids and time.monotonic() - last_scan > _RESCAN_S:
                    last_scan = time.monotonic()
                    self._resolve(sorted(ids))
                reply = c._call(c.redis.xread, {done: self.cursor}, count=1000, block=_BLOCK_MS)
                finished = []
                for _stream, entries in reply or []:
                    for entry_id, fields in entries:
                        self.cursor = entry_id
                        job_id = _text(fields.get(b"id", b"")) if fields else ""
                        if job_id in self.waiting:
                            finished.append(job_id)
                if finished:
                    self._resolve(finished)
            except QueueError as e:
                # the queue is unreachable: every waiting caller learns it now, not at its deadline
                with self.lock:
                    failed, self.waiting = self.waiting, {}
                for futures in failed.values():
                    for fut in futures:
                        if not fut.done():
                            fut.set_exception(e)
                time.sleep(0.5)


class JudgePool:
    """See the module docstring. One per Redis URL is plenty (for_url)."""

    _by_url = {}
    _by_url_lock = threading.Lock()

    def __init__(self, redis_url=None, *, client=None, partition=0):
        self.client = client or client_for(redis_url)
        self.partition = partition
        self.closed = False
        self._waiters = {}
        self._lock = threading.Lock()

    @classmethod
    def for_url(cls, redis_url=None):
        with cls._by_url_lock:
            if redis_url not in cls._by_url:
                cls._by_url[redis_url] = cls(redis_url)
            return cls._by_url[redis_url]

    @property
    def over_gateway(self):
        return not hasattr(self.client, "redis")

    def _waiter(self, tenant):
        with self._lock:
            if tenant not in self._waiters:
                self._waiters[tenant] = _TenantWaiter(self, tenant)
            return self._waiters[tenant]

    def submit(self, jobs):
        """Queues the jobs (one pipelined round trip); returns (tenant, job_ids, futures)."""
        out = self.submit_groups([jobs])[0]
        if isinstance(out, QueueError):
            raise out
        return out

    def submit_groups(self, groups):
        """submit() for several callers at once, in one pipelined round trip: groups is a list of
        job lists, all of one tenant. Returns, per group, (tenant, job_ids, futures) or the
        QueueError (QueueFull: a quota) that refused one of its jobs; a refused group's other jobs
        are cancelled, as if it had been submitted alone, and the other groups are unaffected.
        A failed round trip raises (every group's queued jobs cancelled)."""
        jobs = [j for g in groups for j in g]
        tenants = {j.tenant for j in jobs}
        if len(tenants) != 1:
            raise ValueError("JudgePool: one tenant per call, got %s" % sorted(tenants))
        tenant = tenants.pop()
        ids = [j.job_id for j in jobs]
        waiter = self._waiter(tenant)
        futures = waiter.add(ids)
        try:
            # a job id already in the queue (a caller's retry) is not queued again: its verdict
            # reaches every caller waiting for it
            replies = self.client.submit_many(jobs, self.partition, return_errors=True)
        except QueueError:
            self._withdraw(tenant, ids, futures)
            raise
        out, at = [], 0
        for group in groups:
            span = slice(at, at + len(group))
            at += len(group)
            refused = next((r for r in replies[span] if isinstance(r, QueueError)), None)
            if refused is None:
                out.append((tenant, ids[span], futures[span]))
            else:
                self._withdraw(tenant, ids[span], futures[span], replies[span])
                out.append(refused)
        return out

    def _withdraw(self, tenant, ids, futures, replies=None):
        """Stops waiting for these jobs and cancels those queued (they would run for nobody)."""
        self._waiter(tenant).drop(ids, futures)
        for i, job_id in enumerate(ids):
            if replies is not None and isinstance(replies[i], QueueError):
                continue  # refused: never queued
            try:
                self.client.cancel(tenant, job_id, self.partition)
            except QueueError:
                break

    def _give_up(self, tenant, ids, futures):
        """Cancels (in the queue) the jobs whose futures are not done; their results are None."""
        late = [(j, f) for j, f in zip(ids, futures) if not f.done()]
        self._withdraw(tenant, [j for j, _f in late], [f for _j, f in late])
        out = []
        for f in futures:
            if f.done() and not f.cancelled():
                if f.exception() is not None:
                    raise f.exception()
                out.append(f.result())
            else:
                out.append(None)
        return out

    def judge(self, jobs, *, timeout_s=900.0):
        """kjudge.v1.Result per job, in order; None for those without a verdict at timeout_s."""
        jobs = list(jobs)
        if not jobs:
            return []
        if self.over_gateway:
            return judge_many(jobs, client=self.client, timeout_s=timeout_s, partition=self.partition)
        tenant, ids, futures = self.submit(jobs)
        concurrent.futures.wait(futures, timeout=max(0.0, timeout_s))
        return self._give_up(tenant, ids, futures)

    async def judge_async(self, jobs, *, timeout_s=900.0):
        """judge() for asyncio code: the loop is never blocked and no thread is held per call
        (submission runs in the loop's executor); cancelling it cancels the jobs."""
        jobs = list(jobs)
        if not jobs:
            return []
        loop = asyncio.get_running_loop()
        if self.over_gateway:
            return await loop.run_in_executor(None, lambda: self.judge(jobs, timeout_s=timeout_s))
        tenant, ids, futures = await loop.run_in_executor(None, self.submit, jobs)
        return await self.collect_async(tenant, ids, futures, timeout_s=timeout_s)

    async def collect_async(self, tenant, ids, futures, *, timeout_s, executor=None):
        """The results of submit()'s jobs (None: no verdict), waited for on the loop up to
        timeout_s; the late ones are cancelled in the queue, in executor (round trips), also when
        the wait itself is cancelled."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait([asyncio.wrap_future(f) for f in futures], timeout=max(0.0, timeout_s))
        except asyncio.CancelledError:
            await loop.run_in_executor(executor, self._give_up, tenant, ids, futures)
            raise
        if all(f.done() for f in futures):
            return self._give_up(tenant, ids, futures)  # nothing to cancel: no round trip
        return await loop.run_in_executor(executor, self._give_up, tenant, ids, futures)

    def close(self):
        self.closed = True
