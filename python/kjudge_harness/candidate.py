"""Candidate role (untrusted code in this process; GPU sandbox, exactly one GPU). Loads the
prebuilt extensions read-only, builds ModelNew with the weight seed, runs it on each input set
(inputs from the trusted worker over the job channel, outputs back the same way: shared device
memory, compared by the worker), the timed loop (the GPU lock held only around it), then one
traced pass for legality. Nothing here decides a verdict and no expected output exists in this
process: the report is raw facts for the daemon."""
import json
import os
import threading

import torch

from . import extensions, guards, phases, protocol, trace
from .channel import Channel
from .late_writes import LateWrites
from .snapshot import TensorSnapshot
from kjudge_protocol import inputs as kin
from kjudge_protocol import numerics, timing, transport
from kjudge_protocol.module_loader import load_module

# Each stage's mark on the daemon's clock socket as it begins: a candidate killed at its wall limit
# is told in which stage (kStageMarks in src/pipeline/kernelbench/timeout_stage.cpp).
STAGE_MARKS = {"load": b"l", "init": b"i", "correctness": b"c", "timing": b"t", "trace": b"r"}
POISON_DOUBLE_BELOW = 256 << 20  # outputs this large get a poisoned block of their own size only

_type = type


def task_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def overlaps(a, b):
    if not isinstance(b, torch.Tensor) or a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def poison(device, output_nbytes):
    """Fill memory the next allocation of the output's size is likely to reuse with 0xFF bytes (NaN
    for every float type), so an output that is never written cannot hold a plausible answer. Twice
    the output (room for a temporary first) unless that is large; skipped where it does not fit."""
    nbytes = 2 * output_nbytes if output_nbytes < POISON_DOUBLE_BELOW else output_nbytes
    if nbytes <= 0:
        return
    try:
        block = torch.empty(int(nbytes), dtype=torch.uint8, device=device)
    except torch.cuda.OutOfMemoryError:
        return
    block.fill_(0xFF)
    del block


def enter(report, stages, stage):
    report["stage"] = stage
    stages.mark(STAGE_MARKS[stage])


def warm_up_framework(device):
    """Start the framework's own threads (its pools, the driver's) before counting threads."""
    a = torch.ones(64, 64, device=device)
    (a @ a).sum().item()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def set_up_device(request, report):
    """Stage "device": the device is set up before any candidate code is loaded, so a failure here
    (no GPU visible, no memory left for a context) is the node's, never the candidate's."""
    backend = request["backend"]
    device = torch.device("cpu") if backend == "cpu" else torch.device("cuda")
    report.update({"ok": False, "stage": "device", "flags": []})
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible to the candidate's sandbox")
    warm_up_framework(device)
    return device


def load_candidate(request, report, stages, device, dtype):
    """Stages "load" and "init": the prebuilt extensions hooked in (load_inline counted for the
    trace), the candidate's module loaded and ModelNew built with the weight seed. Returns the
    extension counter, the guards and the model."""
    oracle = request["oracle"]
    with open(request["manifest_path"]) as f:
        manifest = json.load(f)
    hooks = extensions.PrebuiltHooks(manifest, request["backend"], request.get("arch_list", ""),
                                     request["fallback_ext_dir"])
    counter = trace.ExtCounter()
    real_hook = hooks.load_inline

    def counted_load_inline(*args, **kwargs):
        return counter.wrap_module(real_hook(*args, **kwargs))

    hooks.load_inline = counted_load_inline
    extensions.install(hooks)
    guard = guards.Guards({"torch.utils.cpp_extension.load_inline":
                           lambda: torch.utils.cpp_extension.load_inline})

    cand = load_module(request["candidate_path"], "candidate")
    report["built_at_run"] = hooks.built_at_run
    enter(report, stages, "init")
    kin.set_seed(int(request["weight_seed"]))
    model = cand.ModelNew(*oracle["init_inputs"]).to(device)
    if dtype != torch.float32:
        model = model.to(dtype)
    report["guards_changed"] = guard.changed()
    phases.mark("load_and_init")
    return counter, guard, model


def correctness_call(chan, model, values, device):
    """One call on a set's inputs, under the shared GPU lock: no correctness call overlaps another
    job's timed loop."""
    chan.lock(shared=True)
    try:
        if device.type == "cuda":
            # the call starts on an idle device: work a candidate puts on a side stream of its
            # own must not race the poison fill (its output would be NaN, INCORRECT rather
            # than the CHEAT the timing stage names)
            torch.cuda.synchronize(device)
        out = model(*values)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    finally:
        chan.unlock()
    return out


def describe_output(k, out, values):
    desc = {"index": k, "type": _type(out).__module__ + "." + _type(out).__qualname__}
    if _type(out) is torch.Tensor:
        desc.update(transport.describe(out))
        desc["device"] = str(out.device)
        desc["aliases_input"] = any(overlaps(out, v) for v in values)
    return desc


def run_correctness(report, chan, model, oracle, device, threads_before):
    """Stage "correctness": the model on each input set, its outputs to the worker (which compares
    them), and what the calls did besides: inputs mutated, outputs changed after the call returned,
    threads left running."""
    outputs, mutated, threads_alive = [], [], []
    late = LateWrites(device)
    for entry in oracle["sets"]:
        if "skipped" in entry:
            continue
        late.check()  # the previous set's output, before this call starts
        k = entry["index"]
        values = chan.inputs(k)
        # GPU inputs are mapped read-only and checked by the worker; host ones are this
        # process's copy-on-write pages, checked here
        before = TensorSnapshot(values) if device.type == "cpu" else None
        poison(device, entry.get("output_nbytes", 0))
        out = correctness_call(chan, model, values, device)
        # The call returned, its threads did not. CPU backend only until a GPU run shows the CUDA
        # driver starts no short-lived threads of its own during a call (the late-write check
        # and the count after the run cover the GPU).
        if device.type == "cpu" and threads_before > 0 and task_count() > threads_before:
            threads_alive.append(entry["name"])
        desc = describe_output(k, out, values)
        late.returned(entry["name"], out, keep=not desc.get("aliases_input"))
        chan.send_output("output", k, out if _type(out) is torch.Tensor else None, desc)
        if desc.get("aliases_input"):
            late.check()  # before its inputs are released: an output on their memory goes with them
        outputs.append(desc)
        if before is not None and before.changed(values):
            mutated.append(entry["name"])
        del out, before, values
        chan.release(k)
    late.release()
    report["outputs"] = outputs
    report["inputs_mutated"] = mutated
    report["outputs_changed_after_return"] = late.changed
    report["threads_alive_after_call"] = threads_alive
    del late


def run_timed_loop(request, report, chan, model, oracle, sets, device, compat):
    """Stage "timing": the timed loop over the pool of input sets, under the exclusive GPU lock;
    the audited calls' outputs to the worker afterwards."""
    tcfg = dict(request.get("timing") or {})
    if tcfg.get("skip"):
        return
    pool = [chan.inputs(k, writable=True) for k in oracle["pool"] if k in sets]
    kept = {}

    def on_audit(call, out):
        kept[call] = out

    # GPU: the worker checks its copies after the loop; host copies are checked here
    pool_snapshot = TensorSnapshot(v for values in pool for v in values) \
        if not compat and device.type == "cpu" else None
    chan.lock()
    try:
        if compat:
            report["timing"] = timing.kernelbench_loop(model, pool[0], device)
        else:
            report["timing"] = timing.strict_loop(model, pool, tcfg, device, on_audit, request.get("clock_path"))
    finally:
        chan.unlock()
    if pool_snapshot is not None and pool_snapshot.changed(v for values in pool for v in values):
        report["flags"].append("inputs_mutated_during_timing")
    del pool_snapshot, pool
    for k in oracle["pool"]:
        chan.release(k)
    for call, out in kept.items():
        if _type(out) is torch.Tensor:
            chan.send_output("audit", call, out, transport.describe(out))
    del kept


def run_traced_pass(request, report, chan, model, k, device, counter):
    """Stage "trace": one pass on set k with the legality trace (the CUPTI recorder or profiler)."""
    traced_inputs = chan.inputs(k)
    chan.lock(shared=True)  # the traced pass, like the correctness calls, waits for timed loops
    try:
        traced_out, report["trace"] = trace.traced_call(model, traced_inputs, device, counter,
                                                        request.get("kernel_trace_lib"))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    finally:
        chan.unlock()
    del traced_out, traced_inputs
    chan.release(k)


def finish_report(report, guard, device):
    report["guards_changed"] = guard.changed()
    report["device_name"] = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    if device.type == "cuda":  # torch's allocations at their peak (not the worker's shared sets): for the admission's estimate
        report["device_peak_bytes"] = torch.cuda.max_memory_allocated(device)
    report["torch_version"] = torch.__version__
    report["ok"] = True
    report["stage"] = "done"


def run(request, report):
    """The candidate role's stages in order: device, load, init, correctness, timing, trace; each
    marked on the daemon's clock socket as it begins (STAGE_MARKS) and in the report's phases."""
    device = set_up_device(request, report)
    stages = timing.Clock(request.get("clock_path"))
    stages.mark(b"D")  # the device is set up and no candidate code has loaded (kDeviceReadyMark)
    phases.mark("device_init")
    dtype = kin.PRECISIONS[request.get("precision", "fp32")]
    compat = request.get("mode") == "compat"
    numerics.apply(compat)  # torch's own ops compute as the reference's do (numerics.py)
    oracle = request["oracle"]  # the oracle's report, minus nothing secret: shapes and sizes only
    enter(report, stages, "load")
    threads_before = task_count()
    py_threads_before = threading.active_count()
    counter, guard, model = load_candidate(request, report, stages, device, dtype)

    chan = Channel(request["channel_path"], device)
    sets = [e["index"] for e in oracle["sets"] if "skipped" not in e]
    enter(report, stages, "correctness")
    with torch.no_grad():
        run_correctness(report, chan, model, oracle, device, threads_before)
        report["guards_changed"] = guard.changed()

        phases.mark("correctness")
        enter(report, stages, "timing")
        run_timed_loop(request, report, chan, model, oracle, sets, device, compat)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        phases.mark("timing")
        report["threads_before"], report["threads_after"] = threads_before, task_count()
        report["python_threads_started"] = threading.active_count() - py_threads_before

        # The legality trace comes last: the CUPTI recorder or profiler it starts (their threads)
        # must not touch the timed loop or the thread count.
        enter(report, stages, "trace")
        if request.get("trace", True) and sets:
            run_traced_pass(request, report, chan, model, sets[0], device, counter)
        phases.mark("trace")
    chan.close()
    finish_report(report, guard, device)
    stages.close()
    return report
