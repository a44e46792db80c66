"""Candidate role (untrusted code in this process; GPU sandbox, exactly one GPU). Loads the
prebuilt extensions read-only, builds ModelNew with the weight seed, runs it on each input set
(outputs to files the daemon compares; inputs checksummed after each call), one traced pass for
legality, then the timed loop. Nothing here decides a verdict and no expected output exists in
this process: the report is raw facts for the daemon."""
import json
import os
import threading

import torch

from . import extensions, guards, phases, protocol, timing, trace
from . import inputs as kin
from .module_loader import load_module
from .snapshot import InputSnapshot

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


def poison(device, nbytes):
    """Fill memory the next allocation of this size is likely to reuse with 0xFF bytes (NaN for
    every float type), so an output that is never written cannot hold a plausible answer."""
    if nbytes <= 0:
        return
    block = torch.empty(int(nbytes), dtype=torch.uint8, device=device)
    block.fill_(0xFF)
    del block


def warm_up_framework(device):
    """Start the framework's own threads (its pools, the driver's) before counting threads."""
    a = torch.ones(64, 64, device=device)
    (a @ a).sum().item()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(request, report):
    backend = request["backend"]
    device = torch.device("cpu") if backend == "cpu" else torch.device("cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible to the candidate's sandbox")
    dtype = protocol.PRECISIONS[request.get("precision", "fp32")]
    compat = request.get("mode") == "compat"
    oracle = request["oracle"]  # the oracle's report, minus nothing secret: shapes and sizes only
    report.update({"ok": False, "stage": "load", "flags": []})
    warm_up_framework(device)
    phases.mark("device_init")
    threads_before = task_count()
    py_threads_before = threading.active_count()

    with open(request["manifest_path"]) as f:
        manifest = json.load(f)
    hooks = extensions.PrebuiltHooks(manifest, backend, request.get("arch_list", ""), request["fallback_ext_dir"])
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
    report["stage"] = "init"
    kin.set_seed(int(request["weight_seed"]))
    model = cand.ModelNew(*oracle["init_inputs"]).to(device)
    if dtype != torch.float32:
        model = model.to(dtype)
    report["guards_changed"] = guard.changed()
    phases.mark("load_and_init")

    out_dir = request["outputs_dir"]
    os.makedirs(out_dir, exist_ok=True)
    sets = {}
    for entry in oracle["sets"]:
        if "skipped" in entry:
            continue
        values = protocol.load_values(os.path.join(request["inputs_dir"], f"set{entry['index']}.pt"))
        sets[entry["index"]] = protocol.to_device(values, device)
    phases.mark("load_inputs")

    report["stage"] = "correctness"
    outputs, mutated = [], []
    with torch.no_grad():
        for entry in oracle["sets"]:
            if "skipped" in entry:
                continue
            k = entry["index"]
            before = InputSnapshot(sets[k])
            poison(device, 2 * entry.get("output_nbytes", 0))
            out = model(*sets[k])
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            desc = {"index": k, "type": _type(out).__module__ + "." + _type(out).__qualname__}
            if _type(out) is torch.Tensor:
                desc.update(protocol.write_tensor(out, os.path.join(out_dir, f"set{k}.bin")))
                desc["device"] = str(out.device)
                desc["aliases_input"] = any(overlaps(out, v) for v in sets[k])
            outputs.append(desc)
            if before.changed(sets[k]):
                mutated.append(entry["name"])
            del out, before
        report["outputs"] = outputs
        report["inputs_mutated"] = mutated
        report["guards_changed"] = guard.changed()

        phases.mark("correctness")
        report["stage"] = "timing"
        tcfg = dict(request.get("timing") or {})
        if not tcfg.get("skip"):
            if compat:
                report["timing"] = timing.kernelbench_loop(model, sets[oracle["pool"][0]], device)
            else:
                pool = [sets[k] for k in oracle["pool"] if k in sets]
                audit_dir = request["audit_dir"]
                os.makedirs(audit_dir, exist_ok=True)

                def on_audit(call, out):
                    if _type(out) is torch.Tensor:
                        protocol.write_tensor(out, os.path.join(audit_dir, f"audit{call}.bin"))

                pool_snapshot = InputSnapshot(v for values in pool for v in values)
                report["timing"] = timing.strict_loop(model, pool, tcfg, device, on_audit, request.get("clock_path"))
                if pool_snapshot.changed(v for values in pool for v in values):
                    report["flags"].append("inputs_mutated_during_timing")
                del pool_snapshot
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        phases.mark("timing")
        report["threads_before"], report["threads_after"] = threads_before, task_count()
        report["python_threads_started"] = threading.active_count() - py_threads_before

        # The legality trace comes last: the profiler it starts (CUPTI, its threads) must not
        # touch the timed loop or the thread count.
        report["stage"] = "trace"
        first = min(sets)
        if request.get("trace", True):
            traced_out, report["trace"] = trace.traced_call(model, sets[first], device, counter)
            del traced_out
        phases.mark("trace")
    report["guards_changed"] = guard.changed()
    report["device_name"] = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    report["torch_version"] = torch.__version__
    report["ok"] = True
    report["stage"] = "done"
    return report
