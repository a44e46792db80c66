"""kjudge.reward's scoring from Result messages (no daemon): the daemon's reward scale (the shared
cases the C++ tests check too), correct-but-slow above wrong, our failures never scored, veRL
argument plumbing into the job."""

import json
from pathlib import Path

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


CASES = json.loads((Path(__file__).resolve().parents[2] / "reward_cases.json").read_text())["cases"]


def case_result(case):
    r = result(case["verdict"], case["speedup"])
    passed, total = case["sets"]
    for i in range(total):
        r.correctness.add(name="set%d" % i, passed=i < passed)
    return r


@pytest.mark.parametrize("case", CASES, ids=lambda c: "%s-%s-%s" % (c["verdict"], c["speedup"], c["policy"]))
def test_the_daemons_scale_on_the_shared_cases(case):
    """tests/reward_cases.json: tests/pipeline/reward_test.cpp checks the daemon on the same values."""
    assert reward.policy_score(case["verdict"], case["speedup"] or None,
                               reward.fraction_sets_correct(case_result(case)), case["policy"]) == pytest.approx(case["value"])
    if not case["policy"]:  # a result without the daemon's reward: compute_score's default computed here
        out = reward.score_result(case_result(case))
        assert out["score"] == pytest.approx(case["value"]) and out["policy"] == "default-v2"


def test_the_daemons_reward_is_the_score_and_is_named():
    r = result("OK", 2.0)
    r.reward.value, r.reward.policy_version = 2.3, "binary-v1"  # the job asked for another policy
    out = reward.score_result(r)
    assert out["score"] == 2.3 and out["policy"] == "binary-v1"
    custom = reward.score_result(r, score_fn=lambda v, s: 7.0)
    assert custom["score"] == 7.0 and custom["policy"] == "custom:<lambda>"


def test_one_policy_file_and_the_moore_eval_hierarchy():
    """compile failure < compiled but wrong < correct (legal) < faster; illegal below every honest outcome."""
    assert reward.DEFAULT_POLICY == "default-v2" and reward.CHEATS >= {"FALLBACK", "DECOY", "CHEAT"}
    compile_error = reward.default_score("COMPILE_ERROR", None)
    wrong = reward.default_score("INCORRECT", None, 0.0)
    correct_slow, correct, faster = (reward.default_score("OK", s) for s in (0.01, 1.0, 2.0))
    cheat = min(reward.default_score(v, 3.0) for v in reward.CHEATS)
    assert cheat < compile_error < wrong < correct_slow < correct < faster
    assert max(reward.default_score(v, None) for v in reward.FAILURES) < correct_slow


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


def test_not_judged_is_never_scored_even_with_a_score_fn():
    # the public name the integrations use for a sample without a result (kjudge.integrations.*)
    for verdict, flag in (("QUEUE_ERROR", True), ("JUDGE_TIMEOUT", True), ("INVALID_JOB", False)):
        out = reward.not_judged(verdict, "why", score_fn=lambda v, s: 1.0, on_error="none")
        assert out["score"] is None and not out["scored"] and out["infra_error"] is flag
        assert out["verdict"] == verdict and out["feedback"] == "why" and out["policy"] is None
    with pytest.raises(reward.InfraError):
        reward.not_judged("QUEUE_ERROR", "down")
    with pytest.raises(reward.InvalidJobError):
        reward.not_judged("INVALID_JOB", "bad reference")


def test_unreachable_queue_is_an_infra_error(tmp_path):
    url = "unix://" + str(tmp_path / "nothing.sock")
    with pytest.raises(reward.InfraError):
        reward.compute_score("kb", "```python\n```", "ref", redis_url=url)
    out = reward.compute_score_batch(["kb"] * 2, ["a", "b"], ["r", "r"], redis_url=url, on_error="none")
    assert [o["verdict"] for o in out] == ["QUEUE_ERROR"] * 2 and all(o["infra_error"] for o in out)


def test_verl_arguments_reach_the_job():
    args = reward.job_args("the completion", {"reference": "ref src", "backend": "cpu"},
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
