"""Building blocks for repair turns (multi-turn RL, e.g. veRL): the judge's feedback as the next
prompt, jobs that name their group and turn, and the rates and groups a trainer needs.

    prompt = repair_prompt(reference, completion, result)       # the next turn's user message
    job = build_job(reference, completion=answer, group="level1/19_ReLU#7", turn=1,
                    parent_job_id=result.job_id)                 # or next_turn_args(result) below
    turn_rates(results)       # {"groups", "first_turn", "best_of_turns", "by_turn"}
    all_failed_groups(results)  # groups where no sample of any turn succeeded

A group is one prompt's samples and their repairs: client_meta["group"] when the job named one
(build_job(group=...)), else client_meta["problem_id"], else the job id. A turn is
Result.turn_index (0: the first answer), which the daemon copies from the job's turn."""

from collections import defaultdict

from kjudge.v1 import verdict_pb2

REPAIR_INSTRUCTIONS = ("Fix the kernel so it compiles, gives the reference's outputs and is faster than the "
                       "reference, using the judge's feedback above. Reply with the complete new ModelNew "
                       "source in one ```python code block.")


def is_ok(result) -> bool:
    """The default success: the verdict OK (correct, legal, timed)."""
    return result is not None and result.status == verdict_pb2.OK


def group_of(result) -> str:
    meta = result.client_meta
    return meta.get("group") or meta.get("problem_id") or result.job_id


def _clip(text, limit):
    return text if len(text) <= limit else text[:limit] + "\n[... cut at %d characters]" % limit


def repair_prompt(reference, completion, result, *, max_feedback_chars=4000, instructions=REPAIR_INSTRUCTIONS):
    """The next turn's prompt: the reference, the previous answer and what the judge said about it
    (its verdict, message and feedback text, the same words a human would get)."""
    verdict = verdict_pb2.Verdict.Name(result.status)
    feedback = result.feedback or result.message or "(no feedback)"
    return "\n\n".join([
        "The reference PyTorch model:\n```python\n%s\n```" % reference.strip(),
        "Your previous answer:\n%s" % completion.strip(),
        "The judge's verdict: %s. %s" % (verdict, result.message.strip()),
        "The judge's feedback:\n%s" % _clip(feedback.strip(), max_feedback_chars),
        instructions])


def next_turn_args(result):
    """build_job keyword arguments that make the repair of `result` the next turn of its group."""
    return {"group": group_of(result), "turn": result.turn_index + 1, "parent_job_id": result.job_id}


def _by_group(results):
    groups = defaultdict(list)
    for r in results:
        if r is not None:
            groups[group_of(r)].append(r)
    return groups


def turn_rates(results, succeeded=is_ok):
    """Per group: solved at the first turn (turn 0), solved at any turn (best of turns), and the
    share of groups solved by turn t (cumulative). Rates are over groups; None when there are none."""
    groups = _by_group(results)
    if not groups:
        return {"groups": 0, "first_turn": None, "best_of_turns": None, "by_turn": {}}
    first_success = {g: min((r.turn_index for r in rs if succeeded(r)), default=None) for g, rs in groups.items()}
    last_turn = max(r.turn_index for rs in groups.values() for r in rs)
    solved_by = {t: sum(1 for f in first_success.values() if f is not None and f <= t) / len(groups)
                 for t in range(last_turn + 1)}
    return {"groups": len(groups), "first_turn": solved_by[0],
            "best_of_turns": sum(1 for f in first_success.values() if f is not None) / len(groups),
            "by_turn": solved_by}


def all_failed_groups(results, succeeded=is_ok):
    """Groups where every sample of every turn failed, sorted: the prompts a trainer may repair
    again, drop from the batch, or use to check the dataset."""
    return sorted(g for g, rs in _by_group(results).items() if not any(succeeded(r) for r in rs))
