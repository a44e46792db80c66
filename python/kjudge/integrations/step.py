"""One RL step's rewards: every completion of the step judged in one judge_many call (one
pipelined submission, one wait), with a deadline.

    rewards, details, report = score_step(completions, references, deadline_s=600, backend="cuda")

rewards[i] is the daemon's Result.reward for completion i (kjudge.reward.score_result); a
completion the judge did not score gets `unscored` instead (default None: TRL turns it into NaN
and gives it no advantage; pass a float for trainers that need one). Not scored means: not judged
by the deadline (JUDGE_TIMEOUT: the job is cancelled in the queue, so it holds no slot for an answer
nobody reads), an infrastructure fault (INFRA_ERROR, CANCELLED, EXPIRED, QUEUE_ERROR) or a bad
reference (INVALID_JOB): none is the candidate's doing, so none is scored as the candidate's.
The call returns when the last verdict arrives or at the deadline, whichever is first: it never
waits longer than the slowest job. `report` says what happened (StepReport)."""

import time
from dataclasses import dataclass, field

from kjudge.jobs import new_job_id
from kjudge.reward import compute_score_batch


@dataclass
class StepReport:
    """What a step's reward call did. Indices are positions in the step's completions."""
    total: int = 0
    scored: int = 0
    not_judged_in_time: list = field(default_factory=list)   # JUDGE_TIMEOUT: past the deadline, cancelled
    infra_errors: list = field(default_factory=list)         # INFRA_ERROR, CANCELLED, EXPIRED, QUEUE_ERROR
    invalid_jobs: list = field(default_factory=list)         # INVALID_JOB: the dataset's reference
    verdicts: dict = field(default_factory=dict)              # verdict name -> count
    wall_s: float = 0.0        # the whole reward call
    judge_s: float = 0.0       # first submission to the last verdict, as the judge stamped them
    unscored_value: object = None

    @property
    def overhead_s(self) -> float:
        """What the reward call added to the judge's own time (building, submitting, waking, scoring)."""
        return max(0.0, self.wall_s - self.judge_s)

    def as_metrics(self, prefix="kjudge/"):
        """Scalars for a trainer's logger."""
        out = {prefix + "scored": self.scored, prefix + "not_judged_in_time": len(self.not_judged_in_time),
               prefix + "infra_errors": len(self.infra_errors), prefix + "invalid_jobs": len(self.invalid_jobs),
               prefix + "wall_s": self.wall_s, prefix + "overhead_s": self.overhead_s}
        out.update({prefix + "verdict/" + k: v for k, v in sorted(self.verdicts.items())})
        return out


def completion_text(completion) -> str:
    """A completion as text: a string, or chat messages (the last assistant message's content)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    if isinstance(completion, (list, tuple)) and completion:
        assistant = [m for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
        return completion_text((assistant or list(completion))[-1])
    raise TypeError("a completion is text or chat messages, not %s" % type(completion).__name__)


def _judge_span(results):
    stamps = [(r.submitted_at.ToNanoseconds(), r.finished_at.ToNanoseconds()) for r in results
              if r is not None and r.submitted_at.ToNanoseconds() and r.finished_at.ToNanoseconds()]
    if not stamps:
        return 0.0
    return (max(f for _s, f in stamps) - min(s for s, _f in stamps)) / 1e9


def _tally(details, report):
    for i, d in enumerate(details):
        report.verdicts[d["verdict"]] = report.verdicts.get(d["verdict"], 0) + 1
        if d["scored"]:
            report.scored += 1
        elif d["verdict"] == "JUDGE_TIMEOUT":
            report.not_judged_in_time.append(i)
        elif d["infra_error"]:
            report.infra_errors.append(i)
        else:
            report.invalid_jobs.append(i)


def score_step(completions, references, *, deadline_s=900.0, unscored=None, extra_infos=None, data_source="kjudge",
               **options):
    """(rewards, details, report) for one step; see the module docstring. references: one per
    completion (source text, or a dict with "reference" and job options); extra_infos: per-completion
    job options (group, turn, problem_id, ...); options: job options for all (backend, mode, tenant,
    trials, batch_id, redis_url, score_fn, ...)."""
    if len(completions) != len(references):
        raise ValueError("score_step: %d completions but %d references" % (len(completions), len(references)))
    start = time.monotonic()
    # job ids known up front: a completion not judged in time is still named in the report
    prefix = new_job_id("step")
    extra_infos = [dict(e or {}) for e in (extra_infos or [None] * len(completions))]
    for i, extra in enumerate(extra_infos):
        extra.setdefault("job_id", "%s-%d" % (prefix, i))
    results = []
    details = compute_score_batch([data_source] * len(completions), [completion_text(c) for c in completions],
                                  list(references), extra_infos, timeout_s=deadline_s, on_error="none",
                                  results_out=results, **options)
    for d, extra in zip(details, extra_infos):
        d["job_id"] = extra["job_id"]
    report = StepReport(total=len(details), unscored_value=unscored)
    _tally(details, report)
    rewards = [d["score"] if d["scored"] else unscored for d in details]
    report.wall_s = time.monotonic() - start
    report.judge_s = _judge_span(results)
    return rewards, details, report
