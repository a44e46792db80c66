"""What the candidate must not change in its own process: the timers, synchronisation, the
comparison functions and the harness's hooks. Snapshot before the candidate's code runs, check
after each phase; any difference is reported by name (the daemon's clock cross-check covers
patches made below Python)."""
import builtins
import time

import torch

WATCHED = {
    "time.perf_counter": lambda: time.perf_counter,
    "time.perf_counter_ns": lambda: time.perf_counter_ns,
    "time.time": lambda: time.time,
    "time.monotonic": lambda: time.monotonic,
    "torch.allclose": lambda: torch.allclose,
    "torch.equal": lambda: torch.equal,
    "torch.isclose": lambda: torch.isclose,
    "torch.Tensor.__eq__": lambda: torch.Tensor.__eq__,
    "torch.Tensor.cpu": lambda: torch.Tensor.cpu,
    "torch.Tensor.to": lambda: torch.Tensor.to,
    "torch.Tensor.numpy": lambda: torch.Tensor.numpy,
    "torch.Tensor.contiguous": lambda: torch.Tensor.contiguous,
    "torch.save": lambda: torch.save,
    "torch.load": lambda: torch.load,
    "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
    "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
    "torch.cuda.current_stream": lambda: torch.cuda.current_stream,
    "builtins.open": lambda: builtins.open,
    "builtins.type": lambda: builtins.type,
    "builtins.isinstance": lambda: builtins.isinstance,
}


class Guards:
    def __init__(self, extra=None):
        self.watched = dict(WATCHED)
        self.watched.update(extra or {})
        self.snapshot = {name: get() for name, get in self.watched.items()}

    def changed(self):
        out = []
        for name, get in self.watched.items():
            try:
                if get() is not self.snapshot[name]:
                    out.append(name)
            except Exception:  # noqa: BLE001 - deleting a watched attribute is a change too
                out.append(name)
        return out
