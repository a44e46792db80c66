"""Building a KernelBench-format kjudge.v1.Job from sources, as `kjudge submit --kb-*` does
(src/cli/job_builder.cpp): the reference defines Model/get_inputs/get_init_inputs, the candidate
is either a ModelNew file or a model's raw completion (the judge extracts the code block)."""

import os
import pathlib
import tempfile
import time
import uuid

from kjudge.v1 import job_pb2

BACKENDS = {"cuda": job_pb2.BACKEND_CUDA, "triton": job_pb2.BACKEND_TRITON, "cpu": job_pb2.BACKEND_CPU,
            "hip": job_pb2.BACKEND_HIP, "musa": job_pb2.BACKEND_MUSA}
PRECISIONS = {"fp32": job_pb2.FP32, "fp16": job_pb2.FP16, "bf16": job_pb2.BF16_PRECISION}
MODES = {"strict": job_pb2.STRICT, "compat": job_pb2.COMPAT_KERNELBENCH}


def default_redis_url() -> str:
    """The CLI's default: $KJUDGE_REDIS, else the dev daemon's socket."""
    if os.environ.get("KJUDGE_REDIS"):
        return os.environ["KJUDGE_REDIS"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = pathlib.Path(runtime) / "kjudge" if runtime else pathlib.Path(tempfile.gettempdir()) / ("kjudge-%d" % os.getuid())
    return "unix://" + str(base / "redis.sock")


def default_tenant() -> str:
    return os.environ.get("KJUDGE_TENANT") or "dev"


def new_job_id(prefix: str = "kj") -> str:
    return "%s-%s" % (prefix, uuid.uuid4().hex)


def _source(value, what):
    """Source text as given; a pathlib.Path (or other PathLike) is read. A plain str is always text."""
    if isinstance(value, os.PathLike):
        return pathlib.Path(value).read_text()
    if not isinstance(value, str):
        raise TypeError("%s must be source text (str) or a pathlib.Path, got %s" % (what, type(value).__name__))
    return value


def _set_turn(job, group, turn, parent_job_id):
    if group is not None:
        job.client_meta["group"] = str(group)
    if turn is not None:
        job.turn.turn_index = int(turn)
    if parent_job_id:
        job.turn.parent_job_id = parent_job_id


def build_job(reference, *, completion=None, candidate=None, backend="cuda", mode="strict", precision=None,
              tenant=None, job_id=None, problem_id="", batch_id="", priority=0, sizes=None, trials=None,
              correctness_sets=None, reward_policy=None, compile_wall_ms=None, run_wall_ms=None,
              meta=None, group=None, turn=None, parent_job_id=None) -> job_pb2.Job:
    """One KernelBench-format job. Exactly one of `completion` (an LLM's raw answer) or
    `candidate` (a file defining ModelNew) is needed. `mode` is "strict" (kjudge's checks) or
    "compat" (KernelBench's own rules). meta goes to Result.client_meta unchanged. Repair turns:
    `group` (client_meta["group"]: the prompt's id, shared by its samples and their repairs),
    `turn` (0 for the first answer) and `parent_job_id` come back in the Result (kjudge.turns)."""
    if (completion is None) == (candidate is None):
        raise ValueError("give exactly one of completion= or candidate=")
    if backend not in BACKENDS:
        raise ValueError("backend must be one of %s, not %r" % (", ".join(BACKENDS), backend))
    if mode not in MODES:
        raise ValueError("mode must be 'strict' or 'compat', not %r" % (mode,))
    if precision is not None and precision not in PRECISIONS:
        raise ValueError("precision must be one of %s, not %r" % (", ".join(PRECISIONS), precision))
    job = job_pb2.Job(job_id=job_id or new_job_id(), tenant=tenant or default_tenant(), batch_id=batch_id,
                      priority=priority)
    kb = job.kernelbench
    kb.reference_py = _source(reference, "reference")
    if completion is not None:
        kb.completion = _source(completion, "completion")
    else:
        kb.model_new_py = _source(candidate, "candidate")
    kb.backend = BACKENDS[backend]
    if precision:
        kb.precision = PRECISIONS[precision]
    kb.problem_id = problem_id
    for name, value in (sizes or {}).items():
        kb.size_overrides[name] = int(value)
    job.options.strictness = MODES[mode]
    if trials:
        job.options.timing.max_trials = int(trials)
    if correctness_sets:
        job.options.correctness_sets = int(correctness_sets)
    if reward_policy:
        job.options.reward_policy = reward_policy
    if compile_wall_ms:
        job.limits.compile_wall_ms = int(compile_wall_ms)
    if run_wall_ms:
        job.limits.run_wall_ms = int(run_wall_ms)
    for k, v in (meta or {}).items():
        job.client_meta[str(k)] = str(v)
    _set_turn(job, group, turn, parent_job_id)
    # KernelBench's eval_results.json groups samples by problem: keep the id in the result
    if problem_id and "problem_id" not in job.client_meta:
        job.client_meta["problem_id"] = problem_id
    job.submitted_at.FromNanoseconds(time.time_ns())
    return job
