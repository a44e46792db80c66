"""kjudge: a judge for GPU kernels — Python client.

    import kjudge
    result = kjudge.judge(reference_src, completion=llm_answer, backend="cuda")   # kjudge.v1.Result
    results = kjudge.judge_many([{"reference": r, "completion": c} for r, c in pairs], backend="cuda")
    from kjudge.reward import compute_score                                         # veRL reward

``kjudge.v1`` holds the generated protobuf modules (the wire contract); ``kjudge.keys`` the Redis
key names; ``kjudge.client.Client`` the queue client underneath; ``kjudge.metrics`` pass@k and
fast_p; ``kjudge.bench`` the ``kjudge-bench`` command. Everything that needs redis-py is imported
lazily so that ``kjudge.v1`` stays usable where redis-py is not installed.
"""

import importlib

__version__ = "0.1.0"

__all__ = ["Client", "QueueError", "QueueFull", "keys", "judge", "judge_async", "judge_many", "judge_many_async",
           "JudgeTimeout", "build_job", "verdict_name", "reward", "metrics"]

_FROM = {"Client": "client", "QueueError": "client", "QueueFull": "client",
         "judge": "judging", "judge_async": "judging", "judge_many": "judging", "judge_many_async": "judging",
         "JudgeTimeout": "judging", "verdict_name": "judging", "build_job": "jobs"}
_MODULES = ("keys", "reward", "metrics")


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module("kjudge." + name)
    if name in _FROM:
        return getattr(importlib.import_module("kjudge." + _FROM[name]), name)
    raise AttributeError("module 'kjudge' has no attribute %r" % name)
