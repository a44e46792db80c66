"""kjudge.reward's scoring from Result messages (no daemon): correct-but-slow above wrong, our
failures never scored, veRL argument plumbing into the job."""

import pytest

from kjudge import reward
from kjudge.jobs import build_job
from kjudge.v1 import job_pb2, result_pb2, verdict_pb2


def result(verdict, speedup=0.0, feedback="fb"):
    r = result_pb2.Result(status=verdict_pb2.Verdict.Value(verdict), feedback=feedback, message="msg")
    if speedup:
        r.performance.speedup = speedup
        r.performance.candidate.trials = 10
    return r


def test_correct_but_slow_scores_above_every_failure():
    slow = reward.score_result(result("OK", 0.1))
    assert slow["score"] == 0.25 and slow["verdict"] == "OK" and slow["speedup"] == pytest.approx(0.1)
    for v in reward.FAILURES:
        assert reward.score_result(result(v))["score"] == 0.0
    for v in reward.CHEATS:
        assert reward.score_result(result(v))["score"] == -1.0


def test_faster_scores_more_and_is_bounded():
    scores = [reward.score_result(result("OK", s))["score"] for s in (0.5, 1.0, 2.0, 4.0, 100.0)]
    assert scores == [0.5, 1.0, 1.5, 2.0, 2.0]
    untimed = reward.score_result(result("OK"))
    assert untimed["score"] == 1.0 and untimed["speedup"] is None


@pytest.mark.parametrize("verdict", ["INFRA_ERROR", "CANCELLED", "EXPIRED"])
def test_infra_errors_raise_or_come_back_unscored(verdict):
    with pytest.raises(reward.InfraError) as e:
        reward.score_result(result(verdict))
    assert e.value.verdict == verdict
    out = reward.score_result(result(verdict), on_error="none")
    assert out["score"] is None and not out["scored"] and out["infra_error"]


def test_judge_timeout_and_invalid_job_are_not_scored():
    with pytest.raises(reward.InfraError):
        reward.score_result(None)
    assert reward.score_result(None, on_error="none")["verdict"] == "JUDGE_TIMEOUT"
    with pytest.raises(reward.InvalidJobError):
        reward.score_result(result("INVALID_JOB"))
    bad = reward.score_result(result("INVALID_JOB"), on_error="none")
    assert bad["score"] is None and not bad["infra_error"]


def test_unreachable_queue_is_an_infra_error(tmp_path):
    url = "unix://" + str(tmp_path / "nothing.sock")
    with pytest.raises(reward.InfraError):
        reward.compute_score("kb", "```python\n```", "ref", redis_url=url)
    out = reward.compute_score_batch(["kb"] * 2, ["a", "b"], ["r", "r"], redis_url=url, on_error="none")
    assert [o["verdict"] for o in out] == ["QUEUE_ERROR"] * 2 and all(o["infra_error"] for o in out)


def test_verl_arguments_reach_the_job():
    args = reward._job_args("the completion", {"reference": "ref src", "backend": "cpu"},
                            {"mode": "compat", "problem_id": "level1/19_ReLU", "index": 7}, {"backend": "cuda", "trials": 5})
    job = build_job(args.pop("reference"), **args)
    assert job.kernelbench.completion == "the completion" and job.kernelbench.reference_py == "ref src"
    assert job.kernelbench.backend == job_pb2.BACKEND_CPU  # ground truth beats kwargs
    assert job.options.strictness == job_pb2.COMPAT_KERNELBENCH and job.options.timing.max_trials == 5
    assert job.client_meta["problem_id"] == "level1/19_ReLU"


def test_build_job_wants_exactly_one_candidate(tmp_path):
    with pytest.raises(ValueError):
        build_job("ref")
    with pytest.raises(ValueError):
        build_job("ref", completion="a", candidate="b")
    ref = tmp_path / "ref.py"
    ref.write_text("class Model: pass\n")
    job = build_job(ref, candidate="class ModelNew: pass\n", backend="cpu", sizes={"N": 64})
    assert job.kernelbench.reference_py == "class Model: pass\n"  # a Path is read, a str is text
    assert job.kernelbench.size_overrides["N"] == 64 and job.job_id.startswith("kj-")
