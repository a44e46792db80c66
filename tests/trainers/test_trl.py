"""TRL's GRPOTrainer runs one real training step (CPU, a tiny random GPT-2 made here) with
kjudge's reward, KjudgeReward, against a real kjudged (cpu backend). The step's completions are
scripted through TRL's rollout_func (a random model writes no kernels): for one problem an honest
kernel, a wrong one, a cheat and an answer with no code; for the other, completions whose jobs the
queue cancels (their batch was cancelled before the step: an infrastructure fault). Checked: TRL's
own loop called our function once with its columns; each reward is the daemon's Result.reward
for that job, read back from Redis; the cancelled ones are None (NaN in TRL, no advantage), never
a candidate's score; the reward call ended within a second of the last verdict; the weights moved."""

import math
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import tiny_lm  # noqa: E402
from kjudge.client import Client  # noqa: E402
from kjudge.integrations.dataset import problem_rows  # noqa: E402
from kjudge.integrations.trl import KjudgeReward  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "kernelbench" / "tasks"
NO_CODE = (TASKS.parent / "completions" / "activation_sigmoid_no_code.md").read_text()
G = 4  # completions per prompt


def fenced(path):
    return "Here is my kernel.\n```python\n%s```\n" % path.read_text()


SCRIPT = {  # problem -> its G completions, in order, with the verdict the judge must give
    "activation_relu": [(fenced(TASKS / "activation_relu/cpu_ok.py"), "OK"),
                        (fenced(TASKS / "activation_relu/cpu_cheat_identity.py"), "INCORRECT"),
                        (fenced(TASKS / "activation_relu/cpu_cheat_channel_probe.py"), "CHEAT"),
                        (NO_CODE, "COMPILE_ERROR")],
    "elementwise_scale_bias": [(fenced(TASKS / "elementwise_scale_bias/cpu_ok.py"), "CANCELLED")] * 2
                              + [(fenced(TASKS / "elementwise_scale_bias/cpu_cheat_lazy_tensor.py"), "CANCELLED")] * 2,
}


def scripted_rollout(tok, rows):
    """A rollout_func that answers each prompt with its scripted completions (TRL's contract:
    prompt_ids, completion_ids, logprobs; the trainer decodes and scores them itself)."""
    by_prompt = {r["prompt"]: SCRIPT[r["problem_id"]] for r in rows}
    calls = []

    def rollout(prompts, trainer):
        calls.append(list(prompts))
        seen, prompt_ids, completion_ids = {}, [], []
        # TRL hands the prompt slice with each prompt repeated per generation, or once: answer both
        for p in prompts:
            k = seen.get(p, 0)
            seen[p] = k + 1
            repeats = 1 if prompts.count(p) == G else G
            for text, _verdict in by_prompt[p][k:k + repeats] if repeats == 1 else by_prompt[p]:
                prompt_ids.append(tok(p)["input_ids"])
                completion_ids.append(tok(text)["input_ids"] + [tok.eos_token_id])
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids,
                "logprobs": [[0.0] * len(c) for c in completion_ids]}
    return rollout, calls


def test_one_grpo_step_rewards_are_the_daemons(redis_url, daemon, tmp_path):  # noqa: F811
    rows = problem_rows([(name, TASKS / name / "reference.py") for name in SCRIPT], backend="cpu")
    rows[1]["batch_id"] = "doomed"  # the queue cancels every job of this batch
    rows[0]["batch_id"] = None
    Client(redis_url).cancel_batch("dev", "doomed")
    texts = [r["prompt"] for r in rows] + [t for c in SCRIPT.values() for t, _ in c]
    tok = tiny_lm.tokenizer(texts)
    for t in texts:  # the scripted text is what the reward sees
        assert tok.decode(tok(t)["input_ids"], clean_up_tokenization_spaces=False) == t
    model = tiny_lm.model(tok)
    before = [p.detach().clone() for p in model.parameters()]

    reward = KjudgeReward(redis_url=redis_url, backend="cpu", trials=5, deadline_s=900)
    rollout, rollout_calls = scripted_rollout(tok, rows)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2 * G, num_generations=G,
                      max_completion_length=4096, max_steps=1, learning_rate=1e-2, logging_steps=1,
                      report_to="none", use_cpu=True, save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tok, rollout_func=rollout)
    trainer.train()

    assert rollout_calls, "TRL never called the rollout"
    details, report = reward.last
    assert report.total == 2 * G
    got = {d["job_id"]: d for d in details}
    client = Client(redis_url)
    by_verdict = {}
    for job_id, d in got.items():
        result = client.get_result("dev", job_id)
        assert result is not None, job_id
        by_verdict.setdefault(d["verdict"], []).append(d)
        if d["verdict"] == "CANCELLED":  # the queue's doing: not the candidate's, not scored
            assert d["score"] is None and not d["scored"] and d["infra_error"]
        else:
            assert d["scored"] and d["score"] == result.reward.value, (d, result.reward)
    assert sorted(by_verdict) == ["CANCELLED", "CHEAT", "COMPILE_ERROR", "INCORRECT", "OK"], {
        k: [d["feedback"][:200] for d in v] for k, v in by_verdict.items()}
    assert len(by_verdict["CANCELLED"]) == G and report.infra_errors and len(report.infra_errors) == G
    ok, = by_verdict["OK"]
    assert ok["score"] > 0 > by_verdict["INCORRECT"][0]["score"] > by_verdict["CHEAT"][0]["score"]
    # what TRL logged is what we returned: the mean over scored completions (NaN left out)
    logged = trainer.state.log_history[0]
    scored = [d["score"] for d in details if d["scored"]]
    assert math.isclose(logged["rewards/kjudge/mean"], sum(scored) / len(scored), rel_tol=1e-5), logged
    assert logged["kjudge/infra_errors"] == G and logged["kjudge/scored"] == G
    # the trainer waited on the judge no longer than the slowest job, plus our overhead
    assert report.overhead_s < 1.0, (report.wall_s, report.judge_s)
    # a real optimizer step: the scored group had non-zero advantages
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
