"""The modules a GPU worker's first jobs import lazily, imported once when the worker starts, in a
thread of their own: torch.compile's (Dynamo, Inductor's entry; the compiled baseline) and the
FLOP counter's (the roofline's count, which imports Dynamo). Imported by the first prepares, they
held Python's import lock and the GIL while the problems beside them loaded: py-spy saw 3.3 s of
the GIL in imports under `roofline.count_flops` and 3.05 s under torch.compile in a cold step's
first jobs on one H200 (bench/results/rlstep-20261202-h200-b16-profile). A job that needs one
before the warm-up is done waits for it on the module's import lock, as it would have anyway.
The cpu backend compiles nothing and counts no FLOPs: nothing to warm."""
import importlib
import threading
import time

GPU_MODULES = ("torch._dynamo", "torch._inductor.compile_fx", "torch.utils.flop_counter")


class WarmUp:
    def __init__(self, modules):
        self.modules = tuple(modules)
        self.missing = []  # modules this torch does not have (or that failed): their jobs go without
        self.seconds = 0.0
        self.done = threading.Event()

    def start(self):
        if self.modules:
            threading.Thread(target=self.run, name="warm-up", daemon=True).start()
        else:
            self.run()  # nothing to import: done before the first request
        return self

    def run(self):
        t0 = time.perf_counter()
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 -- an older torch: the job's own use says what it lacks
                self.missing.append(name)
        self.seconds = time.perf_counter() - t0
        self.done.set()

    def report(self):
        """For `ping`: whether the imports are done, how long they took, what was missing."""
        return {"done": self.done.is_set(), "seconds": round(self.seconds, 3), "modules": list(self.modules),
                "missing": list(self.missing)}
