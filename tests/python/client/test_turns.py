"""kjudge.turns without a daemon: the repair prompt from the judge's feedback, jobs that name their
group and turn, first-turn / best-of-turns rates and the groups where every sample failed."""

from kjudge import turns
from kjudge.jobs import build_job
from kjudge.v1 import result_pb2, verdict_pb2


def judged(group, turn, verdict, job_id=None):
    r = result_pb2.Result(job_id=job_id or "%s-t%d-%s" % (group, turn, verdict), status=verdict_pb2.Verdict.Value(verdict),
                          turn_index=turn)
    r.client_meta["group"] = group
    return r


def test_repair_prompt_carries_the_reference_the_answer_and_the_judges_feedback():
    r = result_pb2.Result(status=verdict_pb2.COMPILE_ERROR, message="candidate does not compile: error at kernel.cu:5",
                          feedback="kernel.cu(5): error: identifier \"bias\" is undefined\n" + "x" * 50)
    prompt = turns.repair_prompt("class Model: ...\n", "```python\nclass ModelNew: ...\n```", r, max_feedback_chars=60)
    assert "```python\nclass Model: ...\n```" in prompt and "class ModelNew" in prompt
    assert "The judge's verdict: COMPILE_ERROR. candidate does not compile: error at kernel.cu:5" in prompt
    assert 'identifier "bias" is undefined' in prompt and "[... cut at 60 characters]" in prompt
    assert prompt.endswith(turns.REPAIR_INSTRUCTIONS)


def test_a_repair_job_names_its_group_turn_and_parent():
    first = judged("level1/19_ReLU#7", 0, "INCORRECT", job_id="kj-1")
    job = build_job("ref", completion="fixed", **turns.next_turn_args(first))
    assert job.client_meta["group"] == "level1/19_ReLU#7"
    assert job.turn.turn_index == 1 and job.turn.parent_job_id == "kj-1"
    plain = result_pb2.Result(job_id="kj-2")
    plain.client_meta["problem_id"] = "level1/3_X"
    assert turns.group_of(plain) == "level1/3_X" and turns.group_of(result_pb2.Result(job_id="kj-3")) == "kj-3"


def test_first_turn_and_best_of_turns_rates():
    results = [judged("a", 0, "OK"), judged("a", 1, "OK"),                       # solved at once
               judged("b", 0, "COMPILE_ERROR"), judged("b", 1, "INCORRECT"), judged("b", 2, "OK"),  # by turn 2
               judged("c", 0, "INCORRECT"), judged("c", 1, "FALLBACK"),           # never
               judged("d", 0, "RUNTIME_ERROR"), None]                              # never; None: given up on
    rates = turns.turn_rates(results)
    assert rates["groups"] == 4 and rates["first_turn"] == 0.25 and rates["best_of_turns"] == 0.5
    assert rates["by_turn"] == {0: 0.25, 1: 0.25, 2: 0.5}
    assert turns.all_failed_groups(results) == ["c", "d"]
    assert turns.all_failed_groups(results, succeeded=lambda r: r.status != verdict_pb2.COMPILE_ERROR) == []
    assert turns.turn_rates([])["first_turn"] is None


def test_compute_score_passes_group_and_turn_to_the_job():
    from kjudge import reward
    args = reward.job_args("answer", "ref", {"group": "g1", "turn": 2, "parent_job_id": "kj-9"}, {})
    job = build_job(args.pop("reference"), **args)
    assert job.client_meta["group"] == "g1" and job.turn.turn_index == 2 and job.turn.parent_job_id == "kj-9"
    assert turns.is_ok(judged("a", 0, "OK")) and not turns.is_ok(None)
