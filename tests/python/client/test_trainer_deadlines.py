"""Past the deadline, every trainer integration gives the policy's number (its `unscored`), never a
candidate's: kjudge's functions in a real redis-server and no daemon, so no job gets a verdict.
Checked for TRL (KjudgeReward), veRL (compute_score_batch, compute_score_async) and the step
helper under them: each sample is JUDGE_TIMEOUT, not scored, flagged as the judge's fault, given
`unscored`, and its job is cancelled in the queue (it holds no slot for an answer nobody reads).
The OpenRLHF server's deadline: test_openrlhf_server.py; verifiers': tests/trainers/test_verifiers.py."""

import asyncio
import time
from pathlib import Path

from kjudge import keys
from kjudge.client import Client
from kjudge.integrations import verl as kverl
from kjudge.integrations.trl import KjudgeReward
from kjudge.jobs import default_tenant

TASK = Path(__file__).resolve().parents[2] / "kernelbench" / "tasks" / "activation_relu"
REFERENCE = (TASK / "reference.py").read_text()
HONEST = "```python\n%s```\n" % (TASK / "cpu_ok.py").read_text()  # OK, had it been judged


def queue(redis_url):
    client = Client(redis_url)
    client.load_functions()
    return client


def cancelled(client, job_id):
    return bool(client.redis.exists(keys.cancel(0, default_tenant(), job_id)))


def test_trl_past_the_deadline_gets_unscored(redis_url):
    client = queue(redis_url)
    for unscored in (None, -1.5):  # TRL's default (None: NaN, no advantage), and a number
        reward = KjudgeReward(redis_url=redis_url, backend="cpu", deadline_s=0.3, unscored=unscored)
        t0 = time.monotonic()
        rewards = reward(prompts=["p"] * 3, completions=[HONEST] * 3, reference=[REFERENCE] * 3)
        assert time.monotonic() - t0 < 5  # the deadline, not the judge, ended the step
        details, report = reward.last
        assert rewards == [unscored] * 3
        assert [d["verdict"] for d in details] == ["JUDGE_TIMEOUT"] * 3 and not any(d["scored"] for d in details)
        assert report.not_judged_in_time == [0, 1, 2] and report.scored == 0
        assert all(cancelled(client, d["job_id"]) for d in details)


def test_verl_past_the_deadline_gets_unscored(redis_url):
    client = queue(redis_url)
    extras = [{"job_id": "verl-late-%d" % i} for i in range(2)]
    out = kverl.compute_score_batch(["kb"] * 2, [HONEST] * 2, [REFERENCE] * 2, extras, redis_url=redis_url,
                                    backend="cpu", timeout_s=0.3, unscored=-2.0)
    assert [o["score"] for o in out] == [-2.0, -2.0]
    assert all(o["verdict"] == "JUDGE_TIMEOUT" and not o["scored"] and o["infra_error"] for o in out)
    assert all(cancelled(client, e["job_id"]) for e in extras)

    async def both():
        return await asyncio.gather(*[kverl.compute_score_async("kb", HONEST, REFERENCE, {"job_id": "verl-async-%d" % i},
                                                                redis_url=redis_url, backend="cpu", timeout_s=0.3)
                                      for i in range(2)])
    out = asyncio.run(both())
    assert [o["score"] for o in out] == [kverl.UNSCORED] * 2
    assert all(o["verdict"] == "JUDGE_TIMEOUT" and not o["scored"] and o["infra_error"] for o in out)
    assert all(cancelled(client, "verl-async-%d" % i) for i in range(2))
