"""Rewards for RL trainers, with veRL's custom reward conventions:

    compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict
    compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs) -> [dict]

solution_str is the model's raw completion (the judge extracts its code block); ground_truth is
the KernelBench reference source (or a dict with "reference" and build_job options). Options
(redis_url, tenant, backend, mode, timeout_s, trials, ...) come from kwargs (veRL's reward_kwargs)
and per sample from extra_info, which wins. Each call returns
{"score", "verdict", "speedup", "feedback", "scored", "infra_error", "policy"}.

Our failures are never the candidate's: INFRA_ERROR, CANCELLED, EXPIRED, a judge timeout or an
unreachable queue are infrastructure errors, INVALID_JOB (e.g. a reference that fails) is the
dataset's. By default (on_error="raise") they raise InfraError / InvalidJobError; with
on_error="none" they come back with score None, scored False (mask them out of the batch).

The score is kjudge's one reward scale, the policy named in kjudge/reward_policies.json
("default_policy", now default-v2), the file the daemon embeds too; docs/verdicts-and-rewards.md
shows its table. Each reward dict names it in "policy". compute_score returns the daemon's own
number (Result.reward, computed with the job's options.reward_policy, the default unless set) and
computes the same policy locally only for a result that carries none. A score_fn(verdict, speedup)
replaces it (its "policy" is then "custom:<name>").
"""

import json
import math
from pathlib import Path

from kjudge.client import QueueError
from kjudge.judging import judge_many
from kjudge.v1 import verdict_pb2

FAILURES = frozenset({"COMPILE_ERROR", "RUNTIME_ERROR", "CUDA_FAULT", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT",
                      "INCORRECT"})
POLICIES = json.loads(Path(__file__).with_name("reward_policies.json").read_text())
DEFAULT_POLICY = POLICIES["default_policy"]
CHEATS = frozenset(POLICIES["cheat_verdicts"])
INFRA = frozenset({"INFRA_ERROR", "CANCELLED", "EXPIRED", "JUDGE_TIMEOUT", "QUEUE_ERROR"})
INVALID = frozenset({"INVALID_JOB", "VERDICT_UNSPECIFIED"})
JOB_OPTIONS = ("backend", "mode", "precision", "tenant", "trials", "correctness_sets", "reward_policy", "sizes",
               "compile_wall_ms", "run_wall_ms", "priority", "batch_id", "problem_id", "meta", "job_id", "group", "turn",
               "parent_job_id")


class NotScored(Exception):
    """A result that says nothing about the candidate. .verdict names it, .result is the dict."""

    def __init__(self, message, result):
        super().__init__(message)
        self.verdict = result["verdict"]
        self.result = result


class InfraError(NotScored):
    """The judge failed (INFRA_ERROR, CANCELLED, EXPIRED, JUDGE_TIMEOUT, QUEUE_ERROR)."""


class InvalidJobError(NotScored):
    """The job itself is bad (INVALID_JOB: e.g. the reference fails or the job is too large)."""


def policy_score(verdict: str, speedup=None, fraction_sets_correct=0.0, policy=DEFAULT_POLICY) -> float:
    """What the daemon's compute_reward gives (src/pipeline/verdict/reward.cpp), from the same
    reward_policies.json: default-v1 / default-v2 (an unknown name is the default, as there).
    speedup: reference time / candidate time (None: not timed)."""
    p = POLICIES["policies"].get(policy) or POLICIES["policies"][DEFAULT_POLICY]
    if verdict == "OK":
        log_s = min(p["log2_speedup_max"], max(p["log2_speedup_min"], math.log2(speedup))) if speedup else 0.0
        return p["ok_base"] + p["log2_speedup_weight"] * log_s
    if verdict == "INCORRECT":
        return p["incorrect_base"] + p["incorrect_per_fraction_sets_correct"] * fraction_sets_correct
    if verdict in CHEATS:
        return p["cheat"]
    if verdict in FAILURES:
        return p["failure"]
    raise ValueError("verdict %s has no score" % verdict)


def default_score(verdict: str, speedup, fraction_sets_correct=0.0) -> float:
    """The default policy's score (module docstring)."""
    return policy_score(verdict, speedup, fraction_sets_correct)


def fraction_sets_correct(result) -> float:
    sets = result.correctness
    return sum(1 for s in sets if s.passed) / len(sets) if len(sets) else 0.0


def policy_of(result):
    """The policy the daemon scored this result with, or None where it carries no reward."""
    version = result.reward.policy_version
    return version if version and version != "none" else None


def _score(result, verdict, speedup, score_fn):
    """(score, policy name): a custom score_fn's, the daemon's reward, or the default computed here."""
    if score_fn is not None:
        return float(score_fn(verdict, speedup)), "custom:" + getattr(score_fn, "__name__", "score_fn")
    if result is not None and policy_of(result):
        return result.reward.value, policy_of(result)
    fraction = fraction_sets_correct(result) if result is not None else 0.0
    return policy_score(verdict, speedup, fraction), DEFAULT_POLICY


def score_result(result, score_fn=None, on_error="raise"):
    """A kjudge.v1.Result (or None: the judge gave up) as the reward dict."""
    if result is None:
        verdict, speedup, feedback = "JUDGE_TIMEOUT", None, "the judge did not answer in time"
    else:
        verdict = verdict_pb2.Verdict.Name(result.status)
        timed = result.performance.candidate.trials > 0 and result.performance.speedup > 0
        speedup = result.performance.speedup if timed else None
        feedback = result.feedback or result.message
    return _finish(result, verdict, speedup, feedback, score_fn, on_error)


def not_judged(verdict, feedback, score_fn=None, on_error="raise"):
    """The reward dict of a sample the judge gave no result for: verdict names why (QUEUE_ERROR:
    the queue was unreachable, INVALID_JOB: the job could not be built, JUDGE_TIMEOUT, ...), as
    score_result would give it (on_error as there; an infrastructure or invalid verdict is never
    scored, so it never carries a candidate's number)."""
    return _finish(None, verdict, None, feedback, score_fn, on_error)


def _finish(result, verdict, speedup, feedback, score_fn, on_error):
    out = {"score": None, "verdict": verdict, "speedup": speedup, "feedback": feedback, "scored": False,
           "infra_error": verdict in INFRA, "policy": None}
    if verdict in INFRA or verdict in INVALID:
        if on_error == "raise":
            kind = InfraError if verdict in INFRA else InvalidJobError
            raise kind("%s: %s" % (verdict, feedback), out)
        if on_error != "none":
            raise ValueError("on_error must be 'raise' or 'none', not %r" % (on_error,))
        return out
    out["score"], out["policy"] = _score(result, verdict, speedup, score_fn)
    out["scored"] = True
    return out


def job_args(solution_str, ground_truth, extra_info, kwargs):
    """The judge_many item of one sample: veRL's (solution, ground truth, extra_info) and the
    call's keyword options, each kept only where it is a job option (the completion is the code)."""
    args = {k: v for k, v in kwargs.items() if k in JOB_OPTIONS}
    if isinstance(ground_truth, dict):
        args.update({k: v for k, v in ground_truth.items() if k in JOB_OPTIONS or k == "reference"})
    else:
        args["reference"] = ground_truth
    args.update({k: v for k, v in (extra_info or {}).items() if k in JOB_OPTIONS})
    args["completion"] = solution_str
    return args


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *, redis_url=None,
                        timeout_s=900.0, on_error="raise", score_fn=None, progress=None, results_out=None, **kwargs):
    """Judges a batch at once (one queue round trip); returns one reward dict per sample.
    results_out (a list): gets the kjudge.v1.Result of each sample (None: not judged)."""
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    items = []
    for source, sol, gt, extra in zip(data_sources, solution_strs, ground_truths, extra_infos):
        args = job_args(sol, gt, extra, kwargs)
        meta = dict(args.get("meta") or {})
        if source:
            meta.setdefault("data_source", str(source))
        args["meta"] = meta
        items.append(args)
    try:
        results = judge_many(items, redis_url=redis_url, timeout_s=timeout_s, progress=progress)
        if results_out is not None:
            results_out.extend(results)
    except QueueError as e:
        return [not_judged("QUEUE_ERROR", str(e), score_fn, on_error) for _ in items]
    return [score_result(r, score_fn, on_error) for r in results]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's compute_score for one sample; see the module docstring."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]
