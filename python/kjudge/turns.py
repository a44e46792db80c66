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


def rates_over(attempts):
    """The turn rates of (group, turn, succeeded) triples: the share of groups solved at the first
    turn (turn 0), at any turn (best of turns), and by each turn t (cumulative). Rates are over
    groups; None when there are none."""
    first_success, last_turn = {}, 0
    for group, turn, ok in attempts:
        best = first_success.get(group)
        if ok and (best is None or turn < best):
            first_success[group] = turn
        else:
            first_success.setdefault(group, None)
        last_turn = max(last_turn, turn)
    if not first_success:
        return {"groups": 0, "first_turn": None, "best_of_turns": None, "by_turn": {}}
    n = len(first_success)
    solved_by = {t: sum(1 for f in first_success.values() if f is not None and f <= t) / n
                 for t in range(last_turn + 1)}
    return {"groups": n, "first_turn": solved_by[0], "best_of_turns": solved_by[last_turn], "by_turn": solved_by}


def turn_tally(groups, solved_first_turn, solved, last_turn):
    """A batch's repair-turn tally as the queue keeps it (kjudged counts, per batch, the jobs that
    named their group; success is OK), with its two rates (None without groups)."""
    return {"groups": groups, "solved_first_turn": solved_first_turn, "solved": solved, "last_turn": last_turn,
            "first_turn": solved_first_turn / groups if groups else None,
            "best_of_turns": solved / groups if groups else None}


def turn_rates(results, succeeded=is_ok):
    """rates_over the results: a result's group is group_of, its turn Result.turn_index."""
    return rates_over((group_of(r), r.turn_index, succeeded(r)) for r in results if r is not None)


def all_failed_groups(results, succeeded=is_ok):
    """Groups where every sample of every turn failed, sorted: the prompts a trainer may repair
    again, drop from the batch, or use to check the dataset."""
    return sorted(g for g, rs in _by_group(results).items() if not any(succeeded(r) for r in rs))
