"""The verifiers plugin `kjudge-kernelbench` (verifiers resolves a taskset id to the module of the
same name, `-` as `_`): the KernelBench taskset scored by kjudge, its chat harness and its
single-turn env. The code is kjudge.integrations.verifiers."""

from kjudge.integrations.verifiers import KernelBenchChat, KernelBenchTaskset, KjudgeEnv, load_environment

__all__ = ["KernelBenchTaskset", "KernelBenchChat", "KjudgeEnv", "load_environment"]
