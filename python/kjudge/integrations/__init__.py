"""kjudge's reward inside the RL trainers users run, one module per trainer:

    kjudge.integrations.trl        GRPOTrainer(reward_funcs=KjudgeReward(...))
    kjudge.integrations.verl       veRL's custom_reward_function (compute_score) and the repair rollout
    kjudge.integrations.openrlhf   a --remote_rm_url server over the client
    kjudge.integrations.verifiers  a verifiers environment (load_environment)

What they share: kjudge.integrations.step (a step's completions judged in one judge_many call,
with a deadline and a report of what was not judged) and kjudge.integrations.dataset
(KernelBench problems as prompt rows). No module here imports a trainer at import time, so the
client stays installable without them; docs/trainers/ has one page per trainer."""
