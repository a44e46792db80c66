"""The legality trace (design §5 step 6): one untimed pass of ModelNew.forward under a
dispatch-mode recorder (every framework op that ran, whoever called it: Python or the
extension's C++) and, on a GPU, the profiler's kernel records. Also counts calls into the
candidate's own extensions. The harness checks that its recorder was still in place after the
call; the daemon classifies the ops and kernels with its allow/deny lists."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

try:
    from torch.utils._python_dispatch import _get_current_dispatch_mode
except ImportError:  # pragma: no cover - older torch
    _get_current_dispatch_mode = None


class OpRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func._schema.name)
        return func(*args, **(kwargs or {}))


class ExtCounter:
    """Wraps the functions of the candidate's extension modules so calls can be counted."""

    def __init__(self):
        self.calls = 0

    def wrap_module(self, module):
        import types
        proxy = types.ModuleType(module.__name__)
        proxy.__file__ = getattr(module, "__file__", None)
        for name in dir(module):
            value = getattr(module, name)
            if callable(value) and not name.startswith("__") and not isinstance(value, type):
                setattr(proxy, name, self._counted(value))
            else:
                try:
                    setattr(proxy, name, value)
                except (AttributeError, TypeError):
                    pass
        return proxy

    def _counted(self, fn):
        counter = self

        def call(*args, **kwargs):
            counter.calls += 1
            return fn(*args, **kwargs)

        call.__name__ = getattr(fn, "__name__", "ext_function")
        call.__doc__ = getattr(fn, "__doc__", None)
        return call


SENTINEL_OP = "aten::eye"  # dispatched by the harness right before and after the traced call


def _sentinel():
    torch.eye(1)


def traced_call(model, args, device, ext_counter):
    """Returns the trace section of the report."""
    rec = OpRecorder()
    calls_before = ext_counter.calls
    profile_kernels = device.type == "cuda"
    kernels = []
    tracer_ok, why = True, ""
    prof = None
    if profile_kernels:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    try:
        with rec:
            _sentinel()
            start = len(rec.ops)
            out = model(*args)
            end = len(rec.ops)
            _sentinel()
            mode_after = _get_current_dispatch_mode() if _get_current_dispatch_mode else rec
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    finally:
        if prof is not None:
            prof.__exit__(None, None, None)
    forward_ops = rec.ops[start:end]
    if not rec.ops or rec.ops[0] != SENTINEL_OP or rec.ops[-1] != SENTINEL_OP:
        tracer_ok, why = False, "the dispatch recorder stopped seeing operations during the call"
    elif mode_after is not rec:
        tracer_ok, why = False, "the dispatch mode stack was changed during the call"
    if prof is not None:
        try:
            for evt in prof.events():
                if str(getattr(evt, "device_type", "")).endswith("CUDA"):
                    kernels.append(evt.name)
        except Exception as exc:  # noqa: BLE001 - a profiler failure is reported, never ignored
            tracer_ok, why = False, f"the kernel profiler failed: {exc}"
    return out, {"ops": forward_ops, "kernels": kernels, "ext_calls": ext_counter.calls - calls_before,
                 "tracer_ok": tracer_ok, "tracer_problem": why, "profiled_kernels": profile_kernels}
