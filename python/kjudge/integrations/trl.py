"""kjudge's reward for TRL's GRPOTrainer:

    from kjudge.integrations.trl import KjudgeReward
    from kjudge.integrations.dataset import kernelbench_rows, as_dataset

    train = as_dataset(kernelbench_rows("KernelBench", levels=[1], conversational=True))
    trainer = GRPOTrainer(model=..., reward_funcs=KjudgeReward(backend="cuda", deadline_s=600),
                          train_dataset=train, args=GRPOConfig(...))

TRL calls a reward function with prompts=, completions=, completion_ids= and every dataset column
as a keyword (one value per completion), plus trainer_state, log_extra and log_metric; it wants
one float (or None) per completion. KjudgeReward judges the step's completions in one judge_many
call (kjudge.integrations.step.score_step) against the `reference` column, and returns the daemon's
Result.reward for each. A completion the judge did not score (past the deadline, an infrastructure
fault, a bad reference) gets `unscored` (default None: TRL makes it NaN, leaves it out of its
group's baseline and gives it no advantage). Each step's verdicts go to TRL's completions table
(log_extra "kjudge_verdict") and its counts to the logged metrics (log_metric "kjudge/...");
`.last` keeps the step's (details, report)."""

from kjudge.integrations.step import score_step


class KjudgeReward:
    """A TRL reward function (a callable with TRL's signature). Options are job options for every
    completion (backend, mode, tenant, trials, reward_policy, redis_url, ...); a dataset column
    named like a per-sample option (problem_id, group, backend, mode, ...) wins for its row."""

    __name__ = "kjudge"  # TRL names a reward function's logged metrics after it

    PER_ROW = ("problem_id", "group", "turn", "parent_job_id", "batch_id", "backend", "mode", "precision", "trials",
               "reward_policy")

    def __init__(self, *, reference_column="reference", deadline_s=900.0, unscored=None, batch_prefix="trl",
                 **options):
        self.reference_column = reference_column
        self.deadline_s = deadline_s
        self.unscored = unscored
        self.batch_prefix = batch_prefix
        self.options = options
        self.last = None

    def _extra_infos(self, n, columns):
        rows = [{} for _ in range(n)]
        for name in self.PER_ROW:
            values = columns.get(name)
            if isinstance(values, list) and len(values) == n:
                for row, value in zip(rows, values):
                    if value is not None:
                        row[name] = value
        for row in rows:  # GRPO's group is the prompt: its samples share the problem
            if "group" not in row and "problem_id" in row:
                row["group"] = row["problem_id"]
        return rows

    def __call__(self, prompts=None, completions=None, completion_ids=None, **columns):
        if completions is None:
            raise TypeError("KjudgeReward needs completions= (TRL passes them)")
        if self.reference_column not in columns:
            raise KeyError("the dataset has no %r column: kjudge needs each prompt's reference "
                           "(kjudge.integrations.dataset builds rows with it)" % self.reference_column)
        state = columns.get("trainer_state")
        options = dict(self.options)
        if state is not None and "batch_id" not in options:
            options["batch_id"] = "%s-step%d" % (self.batch_prefix, getattr(state, "global_step", 0))
        rewards, details, report = score_step(completions, columns[self.reference_column],
                                              deadline_s=self.deadline_s, unscored=self.unscored,
                                              extra_infos=self._extra_infos(len(completions), columns),
                                              data_source="trl", **options)
        self.last = (details, report)
        if callable(columns.get("log_extra")):
            columns["log_extra"]("kjudge_verdict", [d["verdict"] for d in details])
        if callable(columns.get("log_metric")):
            for name, value in report.as_metrics().items():
                columns["log_metric"](name, float(value))
        return rewards
