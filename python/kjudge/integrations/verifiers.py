"""kjudge as a verifiers environment (Prime Intellect's `verifiers`, the v1 stack of 0.4: tasksets,
harnesses and envs resolved by id; tests/trainers/locks/verifiers.txt pins the version tested).

    import kjudge.integrations.verifiers as kv
    env = kv.load_environment(dataset="KernelBench", levels=[1], backend="cuda")      # single turn
    env = kv.load_environment(dataset="KernelBench", max_turns=3, backend="cuda")     # repair turns

or by id, as verifiers' own loaders resolve plugins (the two modules ship with `pip install ./python`):

    vf.load_environment(vf.resolve_env_config({"taskset": {"id": "kjudge-kernelbench", ...}}))
    vf.load_environment(vf.resolve_env_config({"id": "kjudge-repair", "taskset": {"id": "kjudge-kernelbench", ...}}))

kjudge-kernelbench (module kjudge_kernelbench) is the taskset: one task per KernelBench problem, its
prompt kjudge.integrations.dataset's, its reference on the task data; with it come its default
harness (one chat completion per turn, in-process, through verifiers' interception endpoint: no
sandbox, no program to install) and its single-turn env (one `agent` seat). kjudge-repair (module
kjudge_repair) is the multi-turn env: after a failing answer the judge's feedback
(kjudge.turns.repair_prompt) is the next user message, until OK or max_turns; each turn is a job
of the problem's group with its turn index and parent job.

Scoring is the task's: the reward "kjudge" is the daemon's Result.reward for the rollout's last
answer (never re-computed here), the metric hook records per-stage metrics (kjudge/verdict as the
Verdict number, kjudge/ok, kjudge/speedup, kjudge/compile_s, kjudge/correctness_s, kjudge/timing_s
from Result.stages, kjudge/judge_s, kjudge/turns) and trace.info["kjudge"] keeps the verdict name, job id and feedback
per turn. Rollouts are scored concurrently (verifiers awaits each trace's scoring): each submits its
job to one JudgePool per Redis URL and awaits its verdict without holding a thread, as veRL's
compute_score_async does. A rollout the judge did not score (INFRA_ERROR, CANCELLED, EXPIRED, no
verdict by deadline_s, an unreachable queue, an invalid reference) raises NotScoredByJudge from the
reward: verifiers records it as the trace's error and leaves rewards["kjudge"] None (scoring did
not run), so it is never the candidate's score and a trainer drops or retries it; kjudge/scored is
0 and kjudge/infra_error 1 on its metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.runtimes import ProgramResult, SubprocessConfig

from kjudge import turns
from kjudge.client import QueueError
from kjudge.integrations.dataset import PROMPT, kernelbench_rows, problem_rows
from kjudge.integrations.pool import JudgePool
from kjudge.integrations.step import completion_text
from kjudge.jobs import build_job
from kjudge.reward import not_judged, score_result
from kjudge.v1 import result_pb2, verdict_pb2

TASKSET_ID = "kjudge-kernelbench"
REPAIR_ENV_ID = "kjudge-repair"


class NotScoredByJudge(Exception):
    """The judge gave no verdict on the candidate (an infrastructure fault, no verdict in time,
    an invalid job): the rollout has no reward."""


# ---- the taskset ------------------------------------------------------------------------------

class KernelBenchData(vf.TaskData):
    reference: str = ""
    """The KernelBench reference source: the job's reference."""
    problem_id: str = ""


class KjudgeTaskConfig(vf.TaskConfig):
    """Job options for every rollout of the taskset (`--env.taskset.task.*`)."""
    redis_url: str | None = None
    backend: str = "cuda"
    tenant: str | None = None
    mode: str | None = None
    precision: str | None = None
    trials: int | None = None
    reward_policy: str | None = None
    batch_id: str | None = None
    deadline_s: float = 900.0
    """A job without a verdict by then is cancelled in the queue and the rollout is not scored."""

    def job_options(self) -> dict:
        names = ("tenant", "mode", "precision", "trials", "reward_policy", "batch_id")
        out = {k: getattr(self, k) for k in names if getattr(self, k) is not None}
        out["backend"] = self.backend
        return out


# the judge's stages (Result.stages, StageTiming) summed into the three a trainer watches
_STAGES = {"compile_s": ("STAGE_BUILD",), "correctness_s": ("STAGE_ORACLE", "STAGE_CANDIDATE", "STAGE_COMPARE"),
           "timing_s": ("STAGE_BASELINE", "STAGE_TIMING")}


def _stage_metrics(result, details) -> dict:
    """Scalars for verifiers' trace.metrics (floats only): the verdict and the judge's stages."""
    verdict = details["verdict"]
    out = {"kjudge/scored": float(details["scored"]), "kjudge/infra_error": float(details["infra_error"]),
           "kjudge/verdict": float(verdict_pb2.Verdict.Value(verdict) if verdict in verdict_pb2.Verdict.keys() else -1),
           "kjudge/ok": float(verdict == "OK"), "kjudge/speedup": float(details["speedup"] or 0.0)}
    if result is not None:
        seconds = {}
        for s in result.stages:
            name = result_pb2.StageTiming.DESCRIPTOR.fields_by_name["stage"].enum_type.values_by_number[s.stage].name
            seconds[name] = seconds.get(name, 0.0) + s.seconds
        for key, names in _STAGES.items():
            if any(n in seconds for n in names):
                out["kjudge/" + key] = sum(seconds.get(n, 0.0) for n in names)
        start, end = result.started_at.ToNanoseconds(), result.finished_at.ToNanoseconds()
        if start and end:
            out["kjudge/judge_s"] = (end - start) / 1e9
    return out


async def judge_answer(config: KjudgeTaskConfig, data: KernelBenchData, answer: str, **job_args):
    """(Result or None, reward details) for one answer: one job through the URL's JudgePool.
    details["job_id"] names the job even without a result (past the deadline: cancelled)."""
    job = None
    try:
        job = build_job(data.reference, completion=answer, problem_id=data.problem_id,
                        meta={"data_source": "verifiers"}, **{**config.job_options(), **job_args})
        [result] = await JudgePool.for_url(config.redis_url).judge_async([job], timeout_s=config.deadline_s)
        details = score_result(result, on_error="none")
    except QueueError as e:
        result, details = None, not_judged("QUEUE_ERROR", str(e), on_error="none")
    except (TypeError, ValueError) as e:  # the dataset's or the options' fault, not the candidate's
        result, details = None, not_judged("INVALID_JOB", str(e), on_error="none")
    details["job_id"] = job.job_id if job is not None else None
    return result, details


_JUDGED: dict[int, tuple[str, Any, dict]] = {}  # id(trace) -> (answer, Result, details): an env's last turn


def remember(trace, answer, result, details):
    """An env that judged the trace's last answer itself (the repair loop) hands it to scoring."""
    _JUDGED[id(trace)] = (answer, result, details)


class KernelBenchTask(vf.Task[KernelBenchData, KjudgeTaskConfig]):
    """One KernelBench problem; the reward is kjudge's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scoring: dict[int, asyncio.Future] = {}

    def _judged(self, trace):
        key = id(trace)
        if key not in self._scoring:
            self._scoring[key] = asyncio.ensure_future(self._judge_last(trace))
        return self._scoring[key]

    async def _judge_last(self, trace):
        answer = trace.last_reply
        known = _JUDGED.pop(id(trace), None)
        if known is not None and known[0].strip() == answer:
            return known[1], known[2]
        args = {"group": "%s#%s" % (self.data.problem_id or "task", trace.id)} if hasattr(trace, "id") else {}
        return await judge_answer(self.config, self.data, answer, **args)

    @vf.metric
    async def kjudge_stages(self, trace):
        result, details = await self._judged(trace)
        info = trace.info.setdefault("kjudge", {"turns": []})
        info.update(verdict=details["verdict"], scored=details["scored"], policy=details["policy"],
                    job_id=details.get("job_id"))
        metrics = _stage_metrics(result, details)
        metrics["kjudge/turns"] = float(max(1, len(info["turns"])))
        return metrics

    @vf.reward
    async def kjudge(self, trace) -> float:
        try:
            result, details = await self._judged(trace)
        finally:
            self._scoring.pop(id(trace), None)
        if not details["scored"]:
            raise NotScoredByJudge("kjudge gave no verdict on the candidate: %s (%s)"
                                   % (details["verdict"], (details["feedback"] or "")[:300]))
        return float(details["score"])  # the daemon's Result.reward (score_result reads it back)


class KernelBenchTasksetConfig(vf.TasksetConfig):
    """Which problems load (`--env.taskset.*`): a KernelBench folder, or (id, reference path) pairs."""
    dataset: str | None = None
    levels: list[int] | None = None
    problems: list[tuple[str, str]] = []
    prompt_template: str = PROMPT
    task: KjudgeTaskConfig = KjudgeTaskConfig()


class KernelBenchTaskset(vf.Taskset[KernelBenchTask, KernelBenchTasksetConfig]):
    def load(self):
        cfg = self.config
        backend = cfg.task.backend
        rows = []
        if cfg.dataset:
            rows += kernelbench_rows(cfg.dataset, levels=cfg.levels, backend=backend, template=cfg.prompt_template)
        if cfg.problems:
            rows += problem_rows([(pid, Path(p)) for pid, p in cfg.problems], backend=backend,
                                 template=cfg.prompt_template)
        if not rows:
            raise ValueError("the kjudge taskset needs dataset= (a KernelBench folder) or problems=")
        for row in rows:
            yield KernelBenchTask(KernelBenchData(id=row["problem_id"], name=row["problem_id"], prompt=row["prompt"],
                                                  reference=row["reference"], problem_id=row["problem_id"]),
                                  cfg.task)


# ---- the harness: one chat completion per turn, in-process -------------------------------------

class KernelBenchChatConfig(vf.HarnessConfig):
    pass


class KernelBenchChat(vf.Harness[KernelBenchChatConfig]):
    """The model answers each turn with one chat completion, asked through verifiers'
    interception endpoint (which records the trace); nothing is launched or installed."""
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def setup(self, runtime) -> None:
        return None

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        from openai import AsyncOpenAI

        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        return ProgramResult(exit_code=0, stdout="", stderr="")


def _seat(max_turns=None):
    # harness None: the taskset's own (kjudge_kernelbench exports KernelBenchChat), resolved when
    # the env is built; the runtime only hosts the rollout's bookkeeping (the harness runs in-process)
    return vf.AgentConfig(runtime=SubprocessConfig(), max_turns=max_turns)


# ---- the envs -----------------------------------------------------------------------------------

class KjudgeEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = _seat(max_turns=1)


class KjudgeEnv(vf.Env[KjudgeEnvConfig]):
    """Single turn: the model answers the problem once; the task's scoring judges the answer."""

    async def run(self, task, agents):
        await agents.agent.run(task)


class KjudgeRepairEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = _seat()
    max_turns: int = 3
    """Answers per rollout: the first and up to max_turns-1 repairs."""
    max_feedback_chars: int = 4000


class KjudgeRepairEnv(vf.Env[KjudgeRepairEnvConfig]):
    """Multi-turn repair: each answer is judged; a failing one (a verdict on the candidate, not
    OK) gets the judge's feedback as the next user message. The rollout's reward is its last
    answer's. An answer the judge did not score ends the rollout unscored."""

    async def run(self, task, agents):
        data, config = task.data, task.config
        async with agents.agent.interaction(task) as chat:
            group = "%s#%s" % (data.problem_id or "task", getattr(chat.trace, "id", id(chat.trace)))
            log = chat.trace.info.setdefault("kjudge", {"turns": []})["turns"]
            segment, job_args = await chat.turn(), {"group": group, "turn": 0}
            for turn in range(self.config.max_turns):
                if segment.terminated:
                    break
                answer = completion_text(segment.last_reply)
                result, details = await judge_answer(config, data, answer, **job_args)
                remember(chat.trace, answer, result, details)
                log.append({"turn": turn, "verdict": details["verdict"], "scored": details["scored"],
                            "score": details["score"], "job_id": details.get("job_id")})
                if result is None or not details["scored"] or turns.is_ok(result) or turn + 1 == self.config.max_turns:
                    break
                job_args = turns.next_turn_args(result)
                segment = await chat.turn(turns.repair_prompt(data.reference, answer, result,
                                                              max_feedback_chars=self.config.max_feedback_chars))


# ---- loading -------------------------------------------------------------------------------------

def env_config(*, max_turns=1, dataset=None, levels=None, problems=None, prompt_template=None, env=None, **task):
    """The verifiers EnvConfig for kjudge: the kjudge-kernelbench taskset, single turn
    (max_turns=1) or the kjudge-repair env; task: KjudgeTaskConfig fields (redis_url, backend,
    deadline_s, trials, ...); env: more EnvConfig fields (e.g. {"agent": {"max_output_tokens": ...}})."""
    taskset = {"id": TASKSET_ID, "task": task}
    for key, value in (("dataset", dataset), ("levels", levels), ("problems", problems),
                       ("prompt_template", prompt_template)):
        if value is not None:
            taskset[key] = [[str(i), str(p)] for i, p in value] if key == "problems" else value
    data = {"taskset": taskset, **(env or {})}
    if max_turns > 1:
        data.update(id=REPAIR_ENV_ID, max_turns=max_turns)
    return vf.resolve_env_config(data)


def load_environment(**kwargs):
    """The kjudge environment, built by verifiers' own loader (vf.load_environment); see env_config."""
    return vf.load_environment(env_config(**kwargs))
