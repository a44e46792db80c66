"""Rewards for RL trainers, with veRL's custom reward conventions:

    compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict
    compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs) -> [dict]

solution_str is the model's raw completion (the judge extracts its code block); ground_truth is
the KernelBench reference source (or a dict with "reference" and build_job options). Options
(redis_url, tenant, backend, mode, timeout_s, trials, ...) come from kwargs (veRL's reward_kwargs)
and per sample from extra_info, which wins. Each call returns
{"score", "verdict", "speedup", "feedback", "scored", "infra_error"}.

Our failures are never the candidate's: INFRA_ERROR, CANCELLED, EXPIRED, a judge timeout or an
unreachable queue are infrastructure errors, INVALID_JOB (e.g. a reference that fails) is the
dataset's. By default (on_error="raise") they raise InfraError / InvalidJobError; with
on_error="none" they come back with score None, scored False (mask them out of the batch).

The default score (default_score) separates correct-but-slow from wrong:
    OK                                         clip(1 + 0.5 * log2(speedup), 0.25, 2.0)   (> 0 always)
    COMPILE_ERROR, RUNTIME_ERROR, CUDA_FAULT,
    TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, INCORRECT   0.0
    FALLBACK, DECOY, CHEAT, SUSPICIOUS, UNVERIFIABLE  -1.0
A correct kernel at the reference's speed scores 1.0, 2x faster 1.5, 4x or more 2.0, 2x slower
0.5, 4x or more slower 0.25; an OK result without a timing (timing skipped) scores 1.0.
"""

import math

from kjudge.client import QueueError
from kjudge.judging import judge_many
from kjudge.v1 import verdict_pb2

FAILURES = frozenset({"COMPILE_ERROR", "RUNTIME_ERROR", "CUDA_FAULT", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT",
                      "INCORRECT"})
CHEATS = frozenset({"FALLBACK", "DECOY", "CHEAT", "SUSPICIOUS", "UNVERIFIABLE"})
INFRA = frozenset({"INFRA_ERROR", "CANCELLED", "EXPIRED", "JUDGE_TIMEOUT", "QUEUE_ERROR"})
INVALID = frozenset({"INVALID_JOB", "VERDICT_UNSPECIFIED"})
JOB_OPTIONS = ("backend", "mode", "precision", "tenant", "trials", "correctness_sets", "reward_policy", "sizes",
               "compile_wall_ms", "run_wall_ms", "priority", "batch_id", "problem_id", "meta", "job_id")


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


def default_score(verdict: str, speedup) -> float:
    """The documented default (module docstring). speedup: reference time / candidate time."""
    if verdict == "OK":
        if not speedup or speedup <= 0:
            return 1.0
        return min(2.0, max(0.25, 1.0 + 0.5 * math.log2(speedup)))
    if verdict in CHEATS:
        return -1.0
    if verdict in FAILURES:
        return 0.0
    raise ValueError("verdict %s has no score" % verdict)


def score_result(result, score_fn=default_score, on_error="raise"):
    """A kjudge.v1.Result (or None: the judge gave up) as the reward dict."""
    if result is None:
        verdict, speedup, feedback = "JUDGE_TIMEOUT", None, "the judge did not answer in time"
    else:
        verdict = verdict_pb2.Verdict.Name(result.status)
        timed = result.performance.candidate.trials > 0 and result.performance.speedup > 0
        speedup = result.performance.speedup if timed else None
        feedback = result.feedback or result.message
    return _finish(verdict, speedup, feedback, score_fn, on_error)


def _finish(verdict, speedup, feedback, score_fn, on_error):
    out = {"score": None, "verdict": verdict, "speedup": speedup, "feedback": feedback, "scored": False,
           "infra_error": verdict in INFRA}
    if verdict in INFRA or verdict in INVALID:
        if on_error == "raise":
            kind = InfraError if verdict in INFRA else InvalidJobError
            raise kind("%s: %s" % (verdict, feedback), out)
        if on_error != "none":
            raise ValueError("on_error must be 'raise' or 'none', not %r" % (on_error,))
        return out
    out["score"] = float(score_fn(verdict, speedup))
    out["scored"] = True
    return out


def _job_args(solution_str, ground_truth, extra_info, kwargs):
    args = {k: v for k, v in kwargs.items() if k in JOB_OPTIONS}
    if isinstance(ground_truth, dict):
        args.update({k: v for k, v in ground_truth.items() if k in JOB_OPTIONS or k == "reference"})
    else:
        args["reference"] = ground_truth
    args.update({k: v for k, v in (extra_info or {}).items() if k in JOB_OPTIONS})
    args["completion"] = solution_str
    return args


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *, redis_url=None,
                        timeout_s=900.0, on_error="raise", score_fn=default_score, progress=None, **kwargs):
    """Judges a batch at once (one queue round trip); returns one reward dict per sample."""
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    items = []
    for source, sol, gt, extra in zip(data_sources, solution_strs, ground_truths, extra_infos):
        args = _job_args(sol, gt, extra, kwargs)
        meta = dict(args.get("meta") or {})
        if source:
            meta.setdefault("data_source", str(source))
        args["meta"] = meta
        items.append(args)
    try:
        results = judge_many(items, redis_url=redis_url, timeout_s=timeout_s, progress=progress)
    except QueueError as e:
        return [_finish("QUEUE_ERROR", None, str(e), score_fn, on_error) for _ in items]
    return [score_result(r, score_fn, on_error) for r in results]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's compute_score for one sample; see the module docstring."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]
