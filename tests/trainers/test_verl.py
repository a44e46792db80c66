"""veRL's own reward code (the real package, verl 0.9.1) calls kjudge's reward functions, against a
real kjudged (cpu backend):

  - the reward loop (the current path): verl.experimental.reward_loop.RewardLoopWorker, made from a
    veRL config naming kjudge.integrations.verl's compute_score_async as custom_reward_function
    (loaded by veRL's get_custom_reward_fn / load_reward_manager, reward manager "naive"), scores a
    batch with compute_score_batch, as each of the RewardLoopManager's Ray workers does; the
    rm_scores tensor is assembled with the reward manager class's own assemble_rm_scores;
  - the legacy batch reward manager (verl.workers.reward_manager.BatchRewardManager,
    reward_manager=batch) with compute_score_batch, loaded the same way.

The batch is a veRL DataProto as the rollout leaves it (left-padded prompts, right-padded
responses, the attention mask over both; data_source, reward_model.ground_truth = the KernelBench
reference, extra_info), tokenized with a tokenizer made here (tiny_lm; veRL loads it from a local
path, nothing downloaded). The RewardLoopManager itself (Ray actors, a rollout on GPUs) is not run.

Checked: each sample's score is the daemon's Result.reward for its job (an honest kernel, a
wrong one, a cheat, an answer with no code); the samples whose jobs the queue cancels (an
infrastructure fault) get `unscored` with scored False and infra_error True in the reward extra
info, never a candidate's score; the rm_scores tensor carries each score at the last response
token; the batch waited no longer than the slowest job plus 1 s."""

import asyncio
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls  # noqa: E402
from verl.workers.reward_manager import BatchRewardManager  # noqa: E402

import kjudge.integrations.verl as kverl  # noqa: E402
import tiny_lm  # noqa: E402
from kjudge.client import Client  # noqa: E402
from kjudge.integrations.dataset import problem_rows  # noqa: E402

TASKS = Path(__file__).resolve().parents[1] / "kernelbench" / "tasks"
NO_CODE = (TASKS.parent / "completions" / "activation_sigmoid_no_code.md").read_text()
UNSCORED = -0.5


def fenced(path):
    return "Here is my kernel.\n```python\n%s```\n" % path.read_text()


SAMPLES = [  # (problem, completion, the verdict the judge must give)
    ("activation_relu", fenced(TASKS / "activation_relu/cpu_ok.py"), "OK"),
    ("activation_relu", fenced(TASKS / "activation_relu/cpu_cheat_identity.py"), "INCORRECT"),
    ("activation_relu", fenced(TASKS / "activation_relu/cpu_cheat_channel_probe.py"), "CHEAT"),
    ("activation_relu", NO_CODE, "COMPILE_ERROR"),
    ("elementwise_scale_bias", fenced(TASKS / "elementwise_scale_bias/cpu_ok.py"), "CANCELLED"),
    ("elementwise_scale_bias", fenced(TASKS / "elementwise_scale_bias/cpu_cheat_lazy_tensor.py"), "CANCELLED"),
]


def batch(tok, rows, tag):
    """A DataProto as veRL's rollout leaves it."""
    prompts = [tok(rows[p]["prompt"])["input_ids"] for p, _c, _v in SAMPLES]
    responses = [tok(c)["input_ids"] + [tok.eos_token_id] for _p, c, _v in SAMPLES]
    P, R, pad = max(map(len, prompts)), max(map(len, responses)), tok.pad_token_id
    prompt_t = torch.tensor([[pad] * (P - len(p)) + p for p in prompts])
    resp_t = torch.tensor([r + [pad] * (R - len(r)) for r in responses])
    mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (R - len(r))
                         for p, r in zip(prompts, responses)])
    extra = [{"job_id": "verl-%s-%d" % (tag, i), "problem_id": p, "index": i,
              **({"batch_id": "doomed"} if v == "CANCELLED" else {})} for i, (p, _c, v) in enumerate(SAMPLES)]
    return DataProto.from_dict(
        tensors={"prompts": prompt_t, "responses": resp_t, "attention_mask": mask,
                 "input_ids": torch.cat([prompt_t, resp_t], dim=1)},
        non_tensors={"data_source": np.array(["kernelbench"] * len(SAMPLES), dtype=object),
                     "reward_model": np.array([{"ground_truth": rows[p]["reference"], "style": "rule"}
                                               for p, _c, _v in SAMPLES], dtype=object),
                     "extra_info": np.array(extra, dtype=object)})


def config(tok_dir, redis_url, name):
    return OmegaConf.create({
        "actor_rollout_ref": {"model": {"path": str(tok_dir), "tokenizer_path": None}},
        "reward": {"reward_model": {"enable": False},
                   "reward_manager": {"source": "register", "name": "naive"},
                   "custom_reward_function": {"path": kverl.__file__, "name": name,
                                              "reward_kwargs": {"redis_url": redis_url, "backend": "cpu",
                                                                "trials": 5, "unscored": UNSCORED,
                                                                "timeout_s": 600}}}})


def check(client, scores, infos, tag):
    finished = []
    for i, ((_p, _c, verdict), score) in enumerate(zip(SAMPLES, scores)):
        info = {k: v[i] for k, v in infos.items()}
        assert info["verdict"] == verdict, (i, info)
        result = client.get_result("dev", "verl-%s-%d" % (tag, i))
        assert result is not None
        if verdict == "CANCELLED":  # the queue's doing: flagged, given `unscored`
            assert math.isclose(score, UNSCORED) and not info["scored"] and info["infra_error"]
        else:
            assert info["scored"] and not info["infra_error"]
            assert math.isclose(score, result.reward.value, rel_tol=1e-6), (verdict, score, result.reward)
            finished.append(result.finished_at.ToNanoseconds() / 1e9)
    s = dict(zip([v for _p, _c, v in SAMPLES], scores))
    assert s["OK"] > 0 > s["INCORRECT"] > s["CHEAT"]
    return max(finished)


def tenant_rows_and_tokenizer(redis_url, tmp_path):
    client = Client(redis_url)
    client.cancel_batch("dev", "doomed")
    rows = {r["problem_id"]: r for r in problem_rows([(p, TASKS / p / "reference.py") for p in
                                                      dict.fromkeys(p for p, _c, _v in SAMPLES)], backend="cpu")}
    tok = tiny_lm.tokenizer([r["prompt"] for r in rows.values()] + [c for _p, c, _v in SAMPLES])
    tok_dir = tmp_path / "tokenizer"
    tok.save_pretrained(tok_dir)  # veRL loads the tokenizer from a path
    return client, rows, tok, tok_dir


def test_verl_reward_loop_calls_compute_score_async(redis_url, daemon, tmp_path):  # noqa: F811
    client, rows, tok, tok_dir = tenant_rows_and_tokenizer(redis_url, tmp_path)
    cfg = config(tok_dir, redis_url, "compute_score_async")
    data = batch(tok, rows, "loop")

    async def run():  # the worker takes the running loop (veRL's get_event_loop), as in its actor
        worker = RewardLoopWorker(cfg)
        assert type(worker.reward_manager).__name__ == "NaiveRewardManager" and worker.reward_manager.is_async_reward_score
        t0 = time.time()
        outputs = await worker.compute_score_batch(data)
        return outputs, time.time() - t0, time.time()

    outputs, wall, t_end = asyncio.run(run())
    scores = [o["reward_score"] for o in outputs]
    infos = {k: [o["reward_extra_info"][k] for o in outputs] for k in outputs[0]["reward_extra_info"]}
    last = check(client, scores, infos, "loop")
    assert t_end - last < 1.0, (wall, t_end - last)
    # the RewardLoopManager's next step: rm_scores, each score at its sample's last response token
    rm = resolve_reward_manager_cls(cfg).assemble_rm_scores(data, scores)
    assert rm.shape == data.batch["responses"].shape
    assert torch.allclose(rm.sum(dim=1), torch.tensor(scores, dtype=torch.float32))


def test_verl_batch_reward_manager_calls_compute_score_batch(redis_url, daemon, tmp_path):  # noqa: F811
    client, rows, tok, tok_dir = tenant_rows_and_tokenizer(redis_url, tmp_path)
    cfg = config(tok_dir, redis_url, "compute_score_batch")
    fn = get_custom_reward_fn(cfg)
    manager = BatchRewardManager(tokenizer=tok, num_examine=0, compute_score=fn)
    data = batch(tok, rows, "batch")
    t0 = time.time()
    out = manager(data, return_dict=True)
    t_end = time.time()
    reward_tensor, infos = out["reward_tensor"], out["reward_extra_info"]
    scores = reward_tensor.sum(dim=1).tolist()
    last = check(client, scores, infos, "batch")  # float32 in veRL's reward tensor
    assert t_end - last < 1.0, (t_end - t0, t_end - last)
    json.dumps({k: [str(x) for x in v] for k, v in infos.items()})  # loggable
