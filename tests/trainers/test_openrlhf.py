"""OpenRLHF's own remote-reward client (openrlhf.utils.agent.SingleTurnAgentExecutor, the code
behind --remote_rm_url; the real package, 0.11.2) scores a step's samples through kjudge's reward
server (kjudge.integrations.openrlhf) against a real kjudged (cpu backend).

OpenRLHF generates only through vLLM (its rollout imports vllm; its trainer is Ray + DeepSpeed on
GPUs), which this CPU box cannot run: the engine here is a stand-in whose generate() answers with
scripted completions; everything after it is OpenRLHF's: the executor tokenizes the prompt (a
tokenizer made here, tiny_lm), decodes prompt + response into the query, posts
{"query", "prompts", "labels"} with aiohttp (credentials from the URL: basic auth carrying the
tenant's token) and turns the reply into the sample's reward, scores and extra_logs. Samples run
concurrently, as its engine actor's generate_responses gathers them.

Checked: each sample's reward is the daemon's Result.reward for its job (an honest kernel, a
wrong one, a cheat, an answer with no code); samples whose jobs the queue cancels (an
infrastructure fault) get the server's `unscored` with kjudge_scored 0 and kjudge_infra_error 1,
never a candidate's score; a wrong or missing token is refused (401) and judges nothing; the step
waited no longer than the slowest job plus 1 s."""

import asyncio
import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402

import tiny_lm  # noqa: E402
from kjudge import keys  # noqa: E402
from kjudge.client import Client  # noqa: E402
from kjudge.integrations.dataset import problem_rows  # noqa: E402
from kjudge.integrations.openrlhf import KjudgeRewardServer  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "kernelbench" / "tasks"
NO_CODE = (TASKS.parent / "completions" / "activation_sigmoid_no_code.md").read_text()
TOKEN = "kjt_openrlhf_test_token_0123456789abcdef"
UNSCORED = -0.5  # an unusual number, so a sample given it is easy to tell apart


def fenced(path):
    return "Here is my kernel.\n```python\n%s```\n" % path.read_text()


SCRIPT = {  # problem -> its samples (completion, the verdict the judge must give)
    "activation_relu": [(fenced(TASKS / "activation_relu/cpu_ok.py"), "OK"),
                        (fenced(TASKS / "activation_relu/cpu_cheat_identity.py"), "INCORRECT"),
                        (fenced(TASKS / "activation_relu/cpu_cheat_channel_probe.py"), "CHEAT"),
                        (NO_CODE, "COMPILE_ERROR")],
    "elementwise_scale_bias": [(fenced(TASKS / "elementwise_scale_bias/cpu_ok.py"), "CANCELLED"),
                               (fenced(TASKS / "elementwise_scale_bias/cpu_cheat_lazy_tensor.py"), "CANCELLED")],
}


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine actor (vLLM needs a GPU): generate() answers each
    prompt with its scripted completions in turn, in vLLM's RequestOutput shape."""

    def __init__(self, tok, by_prompt):
        self.tok, self.by_prompt, self.calls = tok, {p: list(c) for p, c in by_prompt.items()}, 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls += 1
        prompt = self.tok.decode(prompt_token_ids, skip_special_tokens=False)
        text = self.by_prompt[prompt].pop(0)
        await asyncio.sleep(0)
        out = SimpleNamespace(token_ids=self.tok(text, add_special_tokens=False)["input_ids"], text=text,
                              finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


def serve(redis_url):
    server = KjudgeRewardServer(("127.0.0.1", 0), redis_url=redis_url, unscored=UNSCORED, deadline_s=600,
                                backend="cpu", trials=5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def post(url, body, headers):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=dict(headers, **{
        "Content-Type": "application/json"}))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_openrlhf_remote_rm_client_gets_the_daemons_rewards(redis_url, daemon):  # noqa: F811
    client = Client(redis_url)
    client.redis.hset(keys.tokens(0), hashlib.sha256(TOKEN.encode()).hexdigest(), "dev")
    client.cancel_batch("dev", "doomed")
    rows = problem_rows([(name, TASKS / name / "reference.py") for name in SCRIPT], backend="cpu")
    # OpenRLHF's label (--label_key): the reference; the second problem's jobs join a cancelled batch
    labels = {r["problem_id"]: r["reference"] if r["problem_id"] == "activation_relu"
              else json.dumps({"reference": r["reference"], "batch_id": "doomed"}) for r in rows}
    prompts = {r["problem_id"]: r["prompt"] for r in rows}
    texts = list(prompts.values()) + [t for c in SCRIPT.values() for t, _ in c]
    tok = tiny_lm.tokenizer(texts)
    engine = ScriptedEngine(tok, {prompts[p]: [t for t, _ in c] for p, c in SCRIPT.items()})
    server = serve(redis_url)
    base = "http://127.0.0.1:%d/reward" % server.server_port
    try:
        # refused without the tenant's token: nothing judged
        probe = {"query": ["x"], "prompts": [""], "labels": [labels["activation_relu"]]}
        assert post(base, probe, {})[0] == 401
        assert post(base, probe, {"Authorization": "Bearer kjt_not_a_token"})[0] == 401
        assert server.judged == 0

        executor = SingleTurnAgentExecutor("http://kjudge:%s@127.0.0.1:%d/reward" % (TOKEN, server.server_port))
        params = SimpleNamespace(max_tokens=None, logprobs=None)

        async def step():  # per prompt, its samples at once (as the engine actor's generate_responses)
            return await asyncio.gather(*[
                executor.execute(prompt=prompts[p], label=labels[p], sampling_params=params, max_length=16384,
                                 hf_tokenizer=tok, llm_engine=engine)
                for p in SCRIPT for _ in SCRIPT[p]])

        t0 = time.time()
        outputs = asyncio.run(step())
        t_end = time.time()
    finally:
        server.shutdown()
        server.server_close()

    assert engine.calls == sum(len(c) for c in SCRIPT.values())
    by_response = {h["response"]: h for h in server.history}
    finished = []
    seen = set()
    for out, (problem, (text, verdict)) in zip(outputs, [(p, s) for p in SCRIPT for s in SCRIPT[p]]):
        d = by_response[text]  # the server judged exactly the response: the prompt is stripped
        seen.add(d["job_id"])
        assert d["verdict"] == verdict, (verdict, d["feedback"][:300])
        assert isinstance(out["reward"], list) and len(out["reward"]) == 1, out
        result = client.get_result("dev", d["job_id"])
        assert result is not None
        if verdict == "CANCELLED":  # the queue's doing: not the candidate's, flagged, given `unscored`
            assert out["reward"] == [UNSCORED] and out["extra_logs"]["kjudge_scored"] == [0.0]
            assert out["extra_logs"]["kjudge_infra_error"] == [1.0]
        else:
            assert out["reward"] == [result.reward.value] == out["scores"], (out, result.reward)
            assert out["extra_logs"]["kjudge_scored"] == [1.0] and out["extra_logs"]["kjudge_infra_error"] == [0.0]
            finished.append(result.finished_at.ToNanoseconds() / 1e9)
    assert len(seen) == len(outputs)
    rewards = {v: out["reward"][0] for out, (_p, (_t, v)) in zip(outputs, [(p, s) for p in SCRIPT for s in SCRIPT[p]])}
    assert rewards["OK"] > 0 > rewards["INCORRECT"] > rewards["CHEAT"]
    # the step waited for the slowest job, not longer (plus the server's and OpenRLHF's overhead)
    assert t_end - max(finished) < 1.0, (t_end - t0, t_end - max(finished))
