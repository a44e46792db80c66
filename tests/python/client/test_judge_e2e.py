"""kjudge.judge / judge_many / judge_many_async and kjudge.reward against a real kjudged (dev
mode, cpu backend): verdicts, the progress callback, cancel-on-timeout of what it gave up on."""

import asyncio
from pathlib import Path

import pytest

import kjudge
from kjudge import reward
from kjudge.client import Client
from kjudge.jobs import build_job
from test_e2e import daemon  # noqa: F401  (the real kjudged fixture)

TASKS = Path(__file__).resolve().parents[2] / "kernelbench" / "tasks"
RELU = TASKS / "activation_relu"
NO_CODE = Path(__file__).resolve().parents[2] / "kernelbench" / "completions" / "activation_sigmoid_no_code.md"


def test_judge_many_verdicts_progress_and_reward(redis_url, daemon):  # noqa: F811
    seen = []
    items = [{"reference": RELU / "reference.py", "candidate": RELU / "cpu_ok.py"},
             {"reference": RELU / "reference.py", "candidate": RELU / "cpu_cheat_identity.py"},
             {"reference": RELU / "reference.py", "completion": NO_CODE.read_text()}]
    results = kjudge.judge_many(items, redis_url=redis_url, backend="cpu", trials=5, timeout_s=900,
                                progress=lambda done, total, job_id, r: seen.append((done, total, r.status)))
    names = [kjudge.verdict_name(r) for r in results]
    assert names == ["OK", "INCORRECT", "COMPILE_ERROR"], [r.message for r in results]
    assert sorted(d for d, _t, _s in seen) == [1, 2, 3] and {t for _d, t, _s in seen} == {3}
    scores = [reward.score_result(r) for r in results]
    assert scores[0]["score"] > 0 and scores[0]["speedup"] > 0
    assert scores[1]["score"] <= 0 and scores[2]["score"] <= 0
    assert scores[2]["feedback"]


def test_compute_score_and_async_twin(redis_url, daemon):  # noqa: F811
    ref = (RELU / "reference.py").read_text()
    completion = "```python\n" + (RELU / "cpu_ok.py").read_text() + "```\n"
    out = reward.compute_score("kernelbench", completion, ref, {"backend": "cpu"}, redis_url=redis_url, trials=5)
    assert out["verdict"] == "OK" and out["scored"] and out["score"] > 0
    job = build_job(RELU / "reference.py", candidate=RELU / "cpu_cheat_identity.py", backend="cpu", trials=5)
    [r] = asyncio.run(kjudge.judge_many_async([job], redis_url=redis_url, timeout_s=900))
    assert kjudge.v1.verdict_pb2.Verdict.Name(r.status) == "INCORRECT"


def test_a_job_given_up_on_is_cancelled(redis_url, daemon):  # noqa: F811
    job = build_job(RELU / "reference.py", candidate=RELU / "cpu_ok.py", backend="cpu", trials=5)
    with pytest.raises(kjudge.JudgeTimeout):
        kjudge.judge(RELU / "reference.py", candidate=RELU / "cpu_ok.py", backend="cpu", redis_url=redis_url,
                     timeout_s=0.001, job_id=job.job_id)
    final = Client(redis_url).wait("dev", job.job_id, timeout_s=300)
    assert final is not None and kjudge.v1.verdict_pb2.Verdict.Name(final.status) == "CANCELLED"
    with pytest.raises(reward.InfraError):
        reward.score_result(final)
