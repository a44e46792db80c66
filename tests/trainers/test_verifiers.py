"""verifiers (the v1 stack, pinned in locks/verifiers.txt) runs kjudge's environment against a real
kjudged (cpu backend): verifiers' own loader builds the env from its plugin ids, its own episode
loop (Env.run_episode: the agent, the interception server, the trace, Task.score) rolls out and
scores; and verifiers' `vf-eval` command runs kjudge's taskset by its id. The model is a scripted
OpenAI-compatible HTTP server on 127.0.0.1 (fixed answers; nothing is downloaded). Checked: each
rollout's reward is the daemon's Result.reward for its job, read back from Redis, for an honest
kernel, a wrong one, a cheat and an answer with no code; a rollout whose job the queue cancelled
(an infrastructure fault) or that had no verdict by deadline_s has no reward (None: scoring did
not run) and an error on its trace, never a candidate's score; the per-stage metrics are on the
trace; in the repair env a failing first answer is followed by a second turn whose user message is
kjudge's feedback, and the rollout's reward is the repair's."""

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import verifiers.v1 as vf

import kjudge.integrations.verifiers as kv
from kjudge import keys
from kjudge.client import Client
from kjudge.jobs import default_tenant

TASKS = Path(__file__).resolve().parents[1] / "kernelbench" / "tasks"
NO_CODE = (TASKS.parent / "completions" / "activation_sigmoid_no_code.md").read_text()


def fenced(path):
    return "Here is my kernel.\n```python\n%s```\n" % path.read_text()


RELU = {  # answer -> the verdict the judge must give
    fenced(TASKS / "activation_relu/cpu_ok.py"): "OK",
    fenced(TASKS / "activation_relu/cpu_cheat_identity.py"): "INCORRECT",
    fenced(TASKS / "activation_relu/cpu_cheat_channel_probe.py"): "CHEAT",
    NO_CODE: "COMPILE_ERROR",
}
SCALE_OK = fenced(TASKS / "elementwise_scale_bias/cpu_ok.py")


class ScriptedModel:
    """An OpenAI-compatible /v1/chat/completions that answers from a script: answer(messages) ->
    text. Every request's messages are kept (.requests)."""

    def __init__(self, answer):
        self.answer, self.requests, self.lock = answer, [], threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with model.lock:
                    model.requests.append(body["messages"])
                    text = model.answer(body["messages"])
                reply = json.dumps({"id": "chatcmpl-%d" % len(model.requests), "object": "chat.completion",
                                    "created": 0, "model": body.get("model", "scripted"),
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": text}}],
                                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(
            base_url="http://127.0.0.1:%d/v1" % self.server.server_port, api_key_var="KJUDGE_TEST_API_KEY"))

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ModelOnly(ScriptedModel):
    """ScriptedModel's endpoint, for a client that is not this process's (base_url)."""

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.server.server_port


def text_of(message):
    content = message.get("content")
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])


async def episodes(env, ctx, tasks):
    async with env.serving():
        return await asyncio.gather(*(env.run_episode(task, ctx) for task in tasks))


def the_trace(episode):
    trace, = episode.traces
    return trace


def test_rollouts_are_scored_with_the_daemons_reward(redis_url, daemon):  # noqa: F811
    answers = iter(list(RELU) + [SCALE_OK])
    model = ScriptedModel(lambda messages: next(answers))
    client = Client(redis_url)
    client.cancel_batch(default_tenant(), "doomed")  # the queue cancels every job of this batch
    try:
        # built the way verifiers builds environments: by plugin id (the taskset kjudge-kernelbench)
        config = vf.resolve_env_config({"taskset": {
            "id": "kjudge-kernelbench", "problems": [["activation_relu", str(TASKS / "activation_relu/reference.py")]],
            "task": {"backend": "cpu", "trials": 5, "redis_url": redis_url, "deadline_s": 600}}})
        env = vf.load_environment(config)
        assert isinstance(env, kv.KjudgeEnv)
        task, = list(env.taskset)
        doomed = kv.load_environment(problems=[("elementwise_scale_bias", TASKS / "elementwise_scale_bias/reference.py")],
                                     backend="cpu", redis_url=redis_url, batch_id="doomed")
        doomed_task, = list(doomed.taskset)

        scored = asyncio.run(episodes(env, model.ctx, [task] * len(RELU)))
        cancelled, = asyncio.run(episodes(doomed, model.ctx, [doomed_task]))
    finally:
        model.close()

    assert len(model.requests) == len(RELU) + 1
    assert all("ModelNew" in text_of(m[-1]) for m in model.requests)  # the taskset's prompt reached the model
    seen = {}
    for episode in scored:
        trace = the_trace(episode)
        assert trace.ok, trace.errors
        info = trace.info["kjudge"]
        result = client.get_result(default_tenant(), info["job_id"])
        assert result is not None, info
        want = RELU[next(a for a in RELU if a.strip() == trace.last_reply)]
        assert info["verdict"] == want, (info, result.feedback[:300])
        # the reward is the daemon's number for that job, not re-computed
        assert trace.rewards["kjudge"].score == result.reward.value, (trace.rewards, result.reward)
        assert trace.metrics["kjudge/scored"] == 1.0 and trace.metrics["kjudge/infra_error"] == 0.0
        assert trace.metrics["kjudge/verdict"] == float(result.status)
        seen[want] = trace
    assert sorted(seen) == ["CHEAT", "COMPILE_ERROR", "INCORRECT", "OK"]
    ok = seen["OK"]
    assert ok.rewards["kjudge"].score > 0 > seen["INCORRECT"].rewards["kjudge"].score > seen["CHEAT"].rewards["kjudge"].score
    for stage in ("kjudge/compile_s", "kjudge/correctness_s", "kjudge/timing_s", "kjudge/judge_s"):
        assert ok.metrics[stage] >= 0.0, (stage, ok.metrics)
    assert ok.metrics["kjudge/ok"] == 1.0 and ok.metrics["kjudge/speedup"] > 0

    # the cancelled job: an infrastructure fault, never scored as the candidate's
    trace = the_trace(cancelled)
    assert trace.rewards.get("kjudge") is None, trace.rewards
    assert not trace.ok and any("CANCELLED" in (e.message or "") for e in trace.errors), trace.errors
    assert trace.metrics["kjudge/scored"] == 0.0 and trace.metrics["kjudge/infra_error"] == 1.0
    assert trace.info["kjudge"]["verdict"] == "CANCELLED"


def test_rollout_without_a_verdict_by_the_deadline_is_not_scored(redis_url, daemon):  # noqa: F811
    # an honest kernel (OK, had it been judged): its job takes seconds, the deadline is 0.2 s
    model = ScriptedModel(lambda messages: fenced(TASKS / "activation_relu/cpu_ok.py"))
    try:
        env = kv.load_environment(problems=[("activation_relu", TASKS / "activation_relu/reference.py")],
                                  backend="cpu", trials=5, redis_url=redis_url, deadline_s=0.2)
        task, = list(env.taskset)
        episode, = asyncio.run(episodes(env, model.ctx, [task]))
    finally:
        model.close()
    trace = the_trace(episode)
    assert trace.rewards.get("kjudge") is None, trace.rewards
    assert not trace.ok and any("JUDGE_TIMEOUT" in (e.message or "") for e in trace.errors), trace.errors
    assert trace.metrics["kjudge/scored"] == 0.0 and trace.metrics["kjudge/infra_error"] == 1.0
    info = trace.info["kjudge"]
    assert info["verdict"] == "JUDGE_TIMEOUT"
    # cancelled in the queue: the verdict, when the worker stops, is CANCELLED, never read as a reward
    assert Client(redis_url).redis.exists(keys.cancel(0, default_tenant(), info["job_id"]))


def test_repair_turn_gets_kjudges_feedback(redis_url, daemon):  # noqa: F811
    wrong = fenced(TASKS / "activation_relu/cpu_cheat_identity.py")
    right = fenced(TASKS / "activation_relu/cpu_ok.py")

    def answer(messages):  # wrong first; the repair (asked with the judge's feedback) is right
        return right if "The judge's feedback" in text_of(messages[-1]) else wrong

    model = ScriptedModel(answer)
    try:
        env = vf.load_environment(vf.resolve_env_config({"id": "kjudge-repair", "max_turns": 3, "taskset": {
            "id": "kjudge-kernelbench", "problems": [["activation_relu", str(TASKS / "activation_relu/reference.py")]],
            "task": {"backend": "cpu", "trials": 5, "redis_url": redis_url}}}))
        assert isinstance(env, kv.KjudgeRepairEnv)
        task, = list(env.taskset)
        episode, = asyncio.run(episodes(env, model.ctx, [task]))
    finally:
        model.close()

    trace = the_trace(episode)
    assert trace.ok, trace.errors
    turns = trace.info["kjudge"]["turns"]
    assert [t["verdict"] for t in turns] == ["INCORRECT", "OK"], turns
    client = Client(redis_url)
    first, second = (client.get_result(default_tenant(), t["job_id"]) for t in turns)
    # the second turn: asked with the whole conversation and kjudge's feedback on the first answer
    assert len(model.requests) == 2
    repair_msg = text_of(model.requests[1][-1])
    assert "The judge's verdict: INCORRECT" in repair_msg and (first.feedback or first.message).strip()[:80] in repair_msg
    assert [m["role"] for m in model.requests[1]][-3:] == ["user", "assistant", "user"]
    # the repair is the next turn of the same group, and the rollout's reward is its Result.reward
    assert second.turn_index == 1 and second.parent_job_id == first.job_id
    assert second.client_meta["group"] == first.client_meta["group"]
    assert trace.rewards["kjudge"].score == second.reward.value > 0
    assert trace.info["kjudge"]["job_id"] == second.job_id  # scored from the env's verdict, not judged again
    assert trace.metrics["kjudge/turns"] == 2.0 and trace.metrics["kjudge/ok"] == 1.0


def test_vf_eval_command_scores_with_the_daemons_reward(redis_url, daemon, tmp_path):  # noqa: F811
    """verifiers' own command line (`vf-eval <taskset-id>`, its eval client against the scripted
    model's endpoint, no upload) loads kjudge's taskset by id and scores every rollout with the
    daemon's Result.reward for its job."""
    answers = iter(list(RELU))
    model = ModelOnly(lambda messages: next(answers))
    vf_eval = Path(sys.executable).with_name("vf-eval")
    out = tmp_path / "out"
    try:
        run = subprocess.run(
            [str(vf_eval), "kjudge-kernelbench", "--push", "False", "-m", "scripted", "-r", str(len(RELU)),
             "--client.base-url", model.base_url, "--client.api-key-var", "KJUDGE_TEST_API_KEY", "-o", str(out),
             "--env.taskset.problems", json.dumps([["activation_relu", str(TASKS / "activation_relu/reference.py")]]),
             "--env.taskset.task.backend", "cpu", "--env.taskset.task.trials", "5",
             "--env.taskset.task.redis-url", redis_url, "--env.taskset.task.deadline-s", "600"],
            env=dict(os.environ, KJUDGE_TEST_API_KEY="unused", HF_HUB_OFFLINE="1"), capture_output=True, text=True,
            timeout=900, cwd=tmp_path)
    finally:
        model.close()
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    episodes_ = [json.loads(line) for f in out.rglob("traces.jsonl") for line in f.read_text().splitlines() if line]
    traces = [t for e in episodes_ for t in e["traces"]]
    assert len(traces) == len(RELU) and all(e["ok"] for e in episodes_), (run.stdout[-2000:], run.stderr[-2000:])
    client = Client(redis_url)
    seen = set()
    for trace in traces:
        info = trace["info"]["kjudge"]
        result = client.get_result(default_tenant(), info["job_id"])
        assert result is not None, info
        reply = next(n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "assistant")
        assert info["verdict"] == RELU[next(a for a in RELU if a.strip() == reply.strip())], info
        assert trace["rewards"]["kjudge"]["score"] == result.reward.value, (trace["rewards"], result.reward)
        assert trace["metrics"]["kjudge/scored"] == 1.0
        seen.add(info["verdict"])
    assert seen == set(RELU.values())
    assert len(model.requests) == len(RELU)


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
