"""Oracle role (trusted process, own sandbox): the reference model, the input sets and the
expected outputs. Inputs go to a directory the candidate reads; expected outputs go to one only
the daemon reads. Also times the reference (eager, and torch.compile where it exists) when the
daemon has no cached baseline: this process never ran candidate code."""
import os
import sys

import torch

from . import inputs as kin
from . import phases, protocol, timing
from .module_loader import load_module


def pick_device(request):
    if request["backend"] == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError(f"backend '{request['backend']}' needs a GPU and none is visible to the oracle")
    return torch.device("cuda")


def node_identity(device):
    """What a cached baseline is only valid on: the device model and driver, torch and its CUDA,
    the interpreter. Cheap to compute, so the oracle checks it before skipping its timing."""
    parts = [f"torch {torch.__version__}", f"cuda {torch.version.cuda}", sys.executable]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        parts += [props.name, f"cc {props.major}.{props.minor}", f"sms {props.multi_processor_count}",
                  f"mem {props.total_memory}"]
        try:
            with open("/proc/driver/nvidia/version") as f:
                parts.append(f.readline().strip())
        except OSError:
            parts.append("driver unknown")
    else:
        model = ""
        try:
            with open("/proc/cpuinfo") as f:
                model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
        except OSError:
            pass
        parts += ["cpu", model, f"threads {torch.get_num_threads()}"]
    return " | ".join(parts)


def json_value(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    raise TypeError(f"get_init_inputs() returned a {type(v).__name__}; only numbers, strings and lists are supported")


def check_output(out):
    if type(out) is not torch.Tensor:
        raise TypeError(f"the reference's forward returned {type(out).__name__}, not one tensor")
    return out


def finite(t):
    return bool(torch.isfinite(t).all()) if t.is_floating_point() else True


def run(request):
    device = pick_device(request)
    dtype = protocol.PRECISIONS[request.get("precision", "fp32")]
    compat = request.get("mode") == "compat"
    if device.type == "cuda" and not compat:
        # Strict references are exact fp32: no TF32 in convolutions or matmuls.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    ref = load_module(request["reference_path"], "reference", request.get("size_overrides"))
    init_inputs = json_value(list(ref.get_init_inputs()))
    kin.set_seed(int(request["weight_seed"]))
    model = ref.Model(*init_inputs).to(device)
    if dtype != torch.float32:
        model = model.to(dtype)
    model.eval()
    phases.mark("reference_init")

    timing_cfg = dict(request.get("timing") or {})
    if compat:
        # KernelBench: correctness trials on its own seed sequence, timing on the inputs drawn
        # right after seeding with 42 (not compared, as in KernelBench).
        seeds = kin.kernelbench_trial_seeds(int(request.get("compat_trials", 5)))
        request["sets"] = [{"name": f"trial{i}", "seed": s} for i, s in enumerate(seeds)]
        request["sets"].append({"name": "timing", "seed": 42, "timing_only": True})
        timing_cfg["pool"] = [len(seeds)]
        timing_cfg["audit_calls"] = []
    in_dir, exp_dir = request["inputs_dir"], request["expected_dir"]
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(exp_dir, exist_ok=True)
    report = {"ok": True, "init_inputs": init_inputs, "sets": [], "device": str(device),
              "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch_version": torch.__version__, "node_identity": node_identity(device)}
    pools = []
    declared_finite = True
    with torch.no_grad():
        for k, spec in enumerate(request["sets"]):
            values = kin.generate(ref, int(spec["seed"]), device, on_device=not compat)
            values = kin.cast(kin.transform(values, spec.get("transform"), int(spec["seed"])), dtype)
            out = check_output(model(*values))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            entry = {"name": spec["name"], "index": k, "timing_only": bool(spec.get("timing_only"))}
            if k == 0:
                declared_finite = finite(out)
            elif not compat and declared_finite and not finite(out):
                # Outside the reference's own domain (e.g. log of a sign-flipped input): not a test.
                entry["skipped"] = "the reference itself gives NaN/Inf on this variant"
                report["sets"].append(entry)
                continue
            torch.save([v.cpu() if isinstance(v, torch.Tensor) else v for v in values],
                       os.path.join(in_dir, f"set{k}.pt"))
            entry["expected"] = protocol.write_tensor(out, os.path.join(exp_dir, f"set{k}.bin"))
            entry["output_nbytes"] = out.numel() * out.element_size()
            report["sets"].append(entry)
            pools.append((k, values))

        phases.mark("sets")
        usable = [k for k, _ in pools]
        # Audited timed calls: expected outputs for exactly the inputs the candidate's call i sees.
        pool_idx = [k for k in timing_cfg.get("pool", usable) if k in usable] or usable[:1]
        by_index = dict(pools)
        audits = []
        seed = int(timing_cfg.get("perturb_seed", 0))
        for call in timing_cfg.get("audit_calls", []):
            k = pool_idx[call % len(pool_idx)]
            undo = kin.perturb(by_index[k], seed, call) if seed else []
            out = model(*by_index[k])
            protocol.write_tensor(out, os.path.join(exp_dir, f"audit{call}.bin"))
            kin.restore(undo)
            audits.append(call)
        report["audits"] = audits
        phases.mark("audits")
        report["pool"] = pool_idx

        cached_on = request.get("baseline_unless_identity") or ""
        if cached_on and cached_on == report["node_identity"]:
            report["baseline_skipped"] = True  # the daemon has this node's figures
        elif request.get("time_baseline") and not timing_cfg.get("skip"):
            report["baseline"] = time_reference(model, [by_index[k] for k in pool_idx], timing_cfg, device, compat,
                                                request.get("clock_path"))
            phases.mark("baseline")
            compiled = compiled_model(model, device, compat)
            if compiled is not None:
                report["compiled_baseline"] = time_reference(compiled, [by_index[k] for k in pool_idx], timing_cfg,
                                                             device, compat, None)
            phases.mark("compiled_baseline")
    return report


def time_reference(model, pool, cfg, device, compat, clock_path):
    """The clean process's loop; its marks on the daemon's clock give the harness's own overhead
    per call, which the candidate's cross-check allows for."""
    if compat:
        return timing.kernelbench_loop(model, pool[0], device)
    cfg = dict(cfg)
    cfg["audit_calls"] = []
    return timing.strict_loop(model, pool, cfg, device, clock_path=clock_path)


def compiled_model(model, device, compat):
    """The torch.compile baseline: only where torch has it and on a GPU (torch 1.13 has none)."""
    if compat or device.type != "cuda" or not hasattr(torch, "compile"):
        return None
    try:
        return torch.compile(model)
    except Exception:  # noqa: BLE001 - a reference that does not compile simply has no compiled baseline
        return None
