"""judge_many against a real redis-server with the kjudge functions but no daemon: nothing
answers, so it gives up at its timeout, cancels what it submitted, reports None, and says so."""

import asyncio

import pytest

import kjudge
from kjudge import keys
from kjudge.client import Client
from kjudge.jobs import build_job


def jobs(n):
    return [build_job("class Model: pass", candidate="class ModelNew: pass", backend="cpu") for _ in range(n)]


def test_given_up_jobs_are_cancelled_and_reported(redis_url):
    c = Client(redis_url)
    c.load_functions()
    js = jobs(2)
    seen = []
    out = kjudge.judge_many(js, client=c, timeout_s=0.3, progress=lambda *a: seen.append(a))
    assert out == [None, None]
    assert sorted(a[0] for a in seen) == [1, 2] and all(a[3] is None for a in seen)
    for j in js:
        assert c.redis.exists(keys.cancel(0, "dev", j.job_id))
    with pytest.raises(kjudge.JudgeTimeout):
        kjudge.judge("class Model: pass", candidate="x", backend="cpu", client=c, timeout_s=0.1)


def test_cancelling_the_async_call_cancels_the_jobs(redis_url):
    c = Client(redis_url)
    c.load_functions()
    js = jobs(1)

    async def go():
        task = asyncio.ensure_future(kjudge.judge_many_async(js, client=c, timeout_s=60))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert c.redis.exists(keys.cancel(0, "dev", js[0].job_id))


def test_one_tenant_and_unique_ids_per_call(redis_url):
    a, b = jobs(2)
    b.tenant = "other"
    with pytest.raises(ValueError, match="same tenant"):
        kjudge.judge_many([a, b], redis_url=redis_url)
    with pytest.raises(ValueError, match="unique"):
        kjudge.judge_many([a, a], redis_url=redis_url)


def test_a_refused_submission_cancels_what_was_queued(redis_url):
    c = Client(redis_url)
    c.load_functions()
    c.redis.hset(keys.quotas(0), "dev", 1)  # one job waiting for a result at most
    js = jobs(2)
    with pytest.raises(kjudge.QueueFull):
        kjudge.judge_many(js, client=c, timeout_s=5)
    assert c.redis.exists(keys.cancel(0, "dev", js[0].job_id))
