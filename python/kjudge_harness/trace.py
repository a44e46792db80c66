"""The legality trace (design §5 step 6): one untimed pass of ModelNew.forward under a
dispatch-mode recorder (every framework op that ran, whoever called it: Python or the
extension's C++) and, on a GPU, the name of every kernel launched: from the kernel recorder
(CUPTI callbacks, kernel_recorder.py) where kjudged supplied it and it starts, else from
torch.profiler. A pass with a launch the recorder cannot name (a CUDA graph) is run again under
the profiler, which sees the graph's kernels. Also counts calls into the candidate's own
extensions. The harness checks that its recorders were still in place after the call; the
daemon classifies the ops and kernels with its allow/deny lists."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import kernel_recorder

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
# The kernel of torch.cuda._sleep, launched by the harness right before and after the traced call
# when the kernel recorder is used; no dispatcher op, so the op list does not change.
SENTINEL_KERNEL = "spin_kernel"


def _sentinel():
    torch.eye(1)


def _kernel_sentinel(device):
    torch.cuda._sleep(1)
    torch.cuda.synchronize(device)


class NoKernels:
    """CPU: no kernels to collect."""

    def before_call(self):
        pass

    def after_call(self):
        pass

    def close(self):
        pass

    def result(self):
        return [], "", ""


class ProfilerWindow(NoKernels):
    """torch.profiler's CUDA activity records around the whole pass (its start-up costs seconds)."""

    def __init__(self):
        from torch.profiler import ProfilerActivity, profile
        self._prof = profile(activities=[ProfilerActivity.CUDA])
        self._prof.__enter__()

    def close(self):
        self._prof.__exit__(None, None, None)

    def result(self):
        try:
            return [e.name for e in self._prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")], "", ""
        except Exception as exc:  # noqa: BLE001 - a profiler failure is reported, never ignored
            return [], f"the kernel profiler failed: {exc}", ""


class RecorderWindow(NoKernels):
    """The kernel recorder, started; the harness's sentinel kernel right before and after the call."""

    def __init__(self, recorder, device):
        self._rec, self._device = recorder, device
        self._before = self._after = 0
        self._stopped = False
        self._result = None

    def before_call(self):
        _kernel_sentinel(self._device)
        self._before = self._rec.count()

    def after_call(self):
        self._after = self._rec.count()
        _kernel_sentinel(self._device)

    def close(self):
        self._stopped = self._rec.stop()

    def result(self):
        """(kernels, tamper problem, why the profiler must redo the pass)."""
        if self._result is None:
            self._result = split_sentinels(self._rec.names(), self._before, self._after,
                                           self._rec.unattributed(), self._stopped)
        return self._result


def split_sentinels(names, before, after, unattributed, stopped):
    """The recorded names minus the two sentinel launches, and what the recording says: no first
    sentinel means the recorder does not see this process's launches (use the profiler); a
    launch it could not name means the profiler must look (a graph's kernels); a missing second
    sentinel means something stopped it during the call (tamper evidence, as the dispatch
    recorder's own sentinel)."""
    first = _last_index(names, 0, before)
    if first < 0:
        return [], "", "the kernel recorder did not see the harness's own launch"
    if unattributed:
        return [], "", f"the kernel recorder could not name {unattributed} launch(es) (CUDA graph or unnamed function)"
    second = _first_index(names, after, len(names))
    if second < 0 or not stopped:
        return [], "the kernel recorder stopped seeing launches during the call", ""
    return names[:first] + names[first + 1:second] + names[second + 1:], "", ""


def _last_index(names, lo, hi):
    for i in range(min(hi, len(names)) - 1, lo - 1, -1):
        if SENTINEL_KERNEL in names[i]:
            return i
    return -1


def _first_index(names, lo, hi):
    for i in range(lo, hi):
        if SENTINEL_KERNEL in names[i]:
            return i
    return -1


def _forward_pass(model, args, device, ext_counter, window):
    """One forward under the dispatch recorder, inside the kernel window; its trace fields."""
    rec = OpRecorder()
    calls_before = ext_counter.calls
    try:
        window.before_call()
        with rec:
            _sentinel()
            start = len(rec.ops)
            out = model(*args)
            end = len(rec.ops)
            _sentinel()
            mode_after = _get_current_dispatch_mode() if _get_current_dispatch_mode else rec
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        window.after_call()
    finally:
        window.close()
    tracer_ok, why = True, ""
    if not rec.ops or rec.ops[0] != SENTINEL_OP or rec.ops[-1] != SENTINEL_OP:
        tracer_ok, why = False, "the dispatch recorder stopped seeing operations during the call"
    elif mode_after is not rec:
        tracer_ok, why = False, "the dispatch mode stack was changed during the call"
    return out, {"ops": rec.ops[start:end], "ext_calls": ext_counter.calls - calls_before,
                 "tracer_ok": tracer_ok, "tracer_problem": why}


def _with_kernels(section, window, source, recorder_problem):
    kernels, problem, _ = window.result()
    section["kernels"] = kernels
    if problem and section["tracer_ok"]:
        section["tracer_ok"], section["tracer_problem"] = False, problem
    section.update({"profiled_kernels": source != "", "kernel_source": source,
                    "kernel_recorder_problem": recorder_problem})
    return section


def _recorder_window(kernel_trace_lib, device):
    """A started recorder window, or (None, why not)."""
    if not kernel_trace_lib:
        return None, ""
    if not hasattr(torch.cuda, "_sleep"):
        return None, "this torch has no torch.cuda._sleep for the sentinel kernel"
    recorder, why = kernel_recorder.load(kernel_trace_lib)
    if recorder is None:
        return None, why
    why = recorder.start()
    return (RecorderWindow(recorder, device), "") if not why else (None, why)


def traced_call(model, args, device, ext_counter, kernel_trace_lib=None):
    """Returns the output and the trace section of the report."""
    if device.type != "cuda":
        window = NoKernels()
        out, section = _forward_pass(model, args, device, ext_counter, window)
        return out, _with_kernels(section, window, "", "")
    window, recorder_problem = _recorder_window(kernel_trace_lib, device)
    if window is not None:
        out, section = _forward_pass(model, args, device, ext_counter, window)
        _, _, redo = window.result()
        if not redo:
            return out, _with_kernels(section, window, "recorder", "")
        recorder_problem = redo
        del out
    window = ProfilerWindow()
    out, section = _forward_pass(model, args, device, ext_counter, window)
    return out, _with_kernels(section, window, "profiler", recorder_problem)
