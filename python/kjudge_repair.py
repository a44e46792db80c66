"""The verifiers plugin `kjudge-repair` (an env id: `--env.id kjudge-repair`): multi-turn repair over
the kjudge-kernelbench taskset, the judge's feedback as the next user message until OK or
max_turns. The code is kjudge.integrations.verifiers."""

from kjudge.integrations.verifiers import KjudgeRepairEnv

__all__ = ["KjudgeRepairEnv"]
