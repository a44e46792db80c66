"""kjudge's reward for veRL, as veRL's custom reward function:

    # ppo_trainer.yaml / the command line
    custom_reward_function.path=<site-packages>/kjudge/integrations/verl.py
    custom_reward_function.name=compute_score          # or compute_score_batch (reward_manager=batch),
                                                       # or compute_score_async (the reward loop awaits it)
    custom_reward_function.reward_kwargs.backend=cuda  # job options for every sample (redis_url, mode, ...)

veRL's reward managers (the reward loop's, verl.experimental.reward_loop.reward_manager, and the
older verl.workers.reward_manager) decode each response and call
compute_score(data_source=, solution_str=, ground_truth=, extra_info=) per sample, or the batch
form with lists; a dict's "score" becomes the reward and its other keys reward_extra_info.
ground_truth is the KernelBench reference (the dataset's reward_model.ground_truth); extra_info's
job options (backend, mode, reward_policy, group, turn, ...) win over reward_kwargs for its sample.

veRL needs a number for every sample, so a sample the judge did not score (an infrastructure
fault, a bad reference, past the deadline `timeout_s`) gets `unscored` (default 0.0) with
"scored": False and "infra_error" in its extra info: mask it with them; it is never the
candidate's score. The repair rollout with kjudge.turns: repair_rewards below."""

from kjudge import turns
from kjudge.client import QueueError
from kjudge.integrations.pool import JudgePool
from kjudge.jobs import build_job
from kjudge.judging import judge_many
from kjudge.reward import compute_score_batch as _batch, job_args, not_judged, score_result

UNSCORED = 0.0
_EXTRA_KEYS = ("verdict", "speedup", "scored", "infra_error", "policy")


def _for_verl(d, unscored):
    """veRL's shape: a float score always, scalar extra info (same keys for every sample)."""
    out = {k: d[k] for k in _EXTRA_KEYS}
    out["speedup"] = float(d["speedup"]) if d["speedup"] is not None else 0.0
    out["policy"] = d["policy"] or ""
    out["score"] = float(d["score"]) if d["scored"] else float(unscored)
    return out


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *, unscored=UNSCORED,
                        **kwargs):
    """veRL's batch reward function (reward_manager=batch): the batch in one judge_many call."""
    details = _batch(data_sources, solution_strs, ground_truths, extra_infos, on_error="none", **kwargs)
    return [_for_verl(d, unscored) for d in details]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's per-sample reward function (the naive reward managers)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None, *, redis_url=None,
                              timeout_s=900.0, unscored=UNSCORED, **kwargs):
    """compute_score for veRL's reward loop, which awaits an async reward function per sample, all
    of a step's samples at once, on its event loop. The samples share one JudgePool per URL: each
    call submits its job and awaits its verdict without holding a thread (one thread per tenant
    reads the queue's completion stream), so the loop is never blocked and a step's samples are
    all in the queue at once, not a thread pool's worth at a time."""
    args = job_args(solution_str, ground_truth, extra_info, kwargs)
    meta = dict(args.get("meta") or {})
    meta.setdefault("data_source", str(data_source))
    args["meta"] = meta
    try:
        job = build_job(args.pop("reference"), **args)
        [result] = await JudgePool.for_url(redis_url).judge_async([job], timeout_s=timeout_s)
    except QueueError as e:
        return _for_verl(not_judged("QUEUE_ERROR", str(e), on_error="none"), unscored)
    except (TypeError, ValueError) as e:  # the sample's options: the dataset's, not the candidate's
        return _for_verl(not_judged("INVALID_JOB", str(e), on_error="none"), unscored)
    return _for_verl(score_result(result, on_error="none"), unscored)


def repair_rewards(references, answers, groups, generate, *, turns_n=2, unscored=UNSCORED, batch_id="", **options):
    """The multi-turn repair rollout (kjudge.turns): turn 0 judges every answer; each later turn
    asks `generate(prompts) -> answers` to repair what failed, from the judge's feedback
    (turns.repair_prompt), as the next turn of the same group. Returns (rewards, results): a reward
    per sample, each sample's last turn's (the first answer anchors the sample: a repair that
    succeeds earns its own reward, a sample with no repair keeps its first); results: every turn's
    Result, for turns.turn_rates. Options: job options (backend, redis_url, timeout_s, ...)."""
    redis_url, timeout_s = options.pop("redis_url", None), options.pop("timeout_s", 900.0)
    jobs = [build_job(ref, completion=a, group=g, turn=0, batch_id=batch_id, **options)
            for ref, a, g in zip(references, answers, groups)]
    last = judge_many(jobs, redis_url=redis_url, timeout_s=timeout_s)
    results = list(last)
    current = list(answers)
    for _turn in range(1, turns_n):
        todo = [i for i, r in enumerate(last) if r is not None and not turns.is_ok(r)
                and score_result(r, on_error="none")["scored"]]
        if not todo:
            break
        repairs = generate([turns.repair_prompt(references[i], current[i], last[i]) for i in todo])
        jobs = [build_job(references[i], completion=a, batch_id=batch_id, **turns.next_turn_args(last[i]), **options)
                for i, a in zip(todo, repairs)]
        for i, a, r in zip(todo, repairs, judge_many(jobs, redis_url=redis_url, timeout_s=timeout_s)):
            current[i], last[i] = a, r
            results.append(r)
    rewards = [_for_verl(score_result(r, on_error="none"), unscored)["score"] for r in last]
    return rewards, results
