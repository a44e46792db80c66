#!/usr/bin/env python3
"""Standalone sanity check of the KernelBench test set (NOT the judge: plain torch, in-process).

For every candidate of the chosen backend whose manifest verdict is OK it
  * imports reference.py and the candidate from their paths,
  * seeds torch.manual_seed(0) before Model(*init) and again before ModelNew(*init),
  * runs both on get_inputs() and on a sign-flipped and an x8-scaled copy of the float inputs
    (a variant is skipped when the reference output has NaN/Inf),
  * checks shape, dtype and torch.allclose(rtol=1e-4, atol=1e-4 * max(1, max|ref|)) (exact for integers),
    and that the candidate did not modify its inputs,
  * checks that the reference forward is fast enough (cpu: < 1 s; cuda with --gpu-sizes: 0.05-20 ms).

Options:
  --backend cpu|cuda   which candidates to run (cuda needs a GPU and torch >= 2.0)
  --gpu-sizes          apply each task's gpu_size_overrides to the reference module constants
  --task SUBSTR        only tasks whose id contains SUBSTR (repeatable)
  --cheats             also run the candidates expected INCORRECT and report whether this simple
                       comparison catches them (informational; never part of the exit status)
  --prebuild N         first import (= build) every candidate file of the backend, expected verdict
                       whatever it is, in N parallel processes, and report build failures
  --completions        also extract the last python/bare fenced block holding ModelNew from each
                       completion file and check it like a candidate (COMPILE_ERROR: no block found)

Extensions are built by torch.utils.cpp_extension into $TORCH_EXTENSIONS_DIR; set MAX_JOBS=1 on
small machines. Exit status 0 when every expected-OK check passed.
"""
import argparse
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-4
ATOL = 1e-4
CPU_REF_LIMIT_S = 1.0
GPU_REF_RANGE_MS = (0.05, 20.0)

_module_counter = [0]


def load_module(path, prefix):
    _module_counter[0] += 1
    name = f"{prefix}_{_module_counter[0]}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def variants(inputs):
    """base, sign-flipped and x8-scaled copies (only floating-point tensors are transformed)."""
    def xf(fn):
        return [fn(t) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    return [("base", xf(lambda t: t.clone())), ("neg", xf(lambda t: -t)), ("x8", xf(lambda t: t * 8))]


def clone_all(inputs):
    return [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]


def compare(out, ref):
    """Returns None when out matches ref, else a short reason."""
    if not isinstance(out, torch.Tensor):
        return f"output is {type(out).__name__}, not a tensor"
    if type(out) is not torch.Tensor:
        return f"output is a tensor subclass {type(out).__name__}"
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return f"dtype {out.dtype} != {ref.dtype}"
    if out.device != ref.device:
        return f"device {out.device} != {ref.device}"
    if not ref.is_floating_point():
        if torch.equal(out, ref):
            return None
        return f"{int((out != ref).sum())} integer mismatches"
    scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
    if torch.allclose(out, ref, rtol=RTOL, atol=ATOL * scale):
        return None
    err = (out.double() - ref.double()).abs()
    return f"max abs err {float(err.max()):.3e} (atol {ATOL * scale:.1e})"


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_ref(model, inputs, device):
    """Median seconds of the reference forward (after a warm-up)."""
    with torch.no_grad():
        model(*inputs)
        sync(device)
        times = []
        for _ in range(5 if device == "cuda" else 3):
            if device == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                model(*inputs)
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
            else:
                t0 = time.perf_counter()
                model(*inputs)
                times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def check_candidate(task, cand_path, args, device):
    """Returns (ok, message)."""
    ref_mod = load_module(os.path.join(HERE, task["dir"], "reference.py"), "kbref")
    if args.gpu_sizes:
        for k, v in task.get("gpu_size_overrides", {}).items():
            setattr(ref_mod, k, v)
    init = ref_mod.get_init_inputs()
    t0 = time.perf_counter()
    cand_mod = load_module(cand_path, "kbcand")
    build_s = time.perf_counter() - t0

    torch.manual_seed(0)
    model = ref_mod.Model(*init)
    torch.manual_seed(0)
    new = cand_mod.ModelNew(*init)
    model.eval()
    new.eval()
    torch.manual_seed(1234)
    inputs = ref_mod.get_inputs()
    if device == "cuda":
        model = model.cuda()
        new = new.cuda()
        inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in inputs]

    ref_s = time_ref(model, clone_all(inputs), device)
    notes = []
    if device == "cpu" and ref_s > CPU_REF_LIMIT_S:
        return False, f"reference too slow on CPU: {ref_s:.3f}s"
    if device == "cuda" and args.gpu_sizes:
        ms = ref_s * 1e3
        if not (GPU_REF_RANGE_MS[0] <= ms <= GPU_REF_RANGE_MS[1]):
            notes.append(f"ref {ms:.3f} ms outside {GPU_REF_RANGE_MS}")

    done, skipped = [], []
    for vname, vin in variants(inputs):
        with torch.no_grad():
            ref_out = model(*clone_all(vin))
            sync(device)
            if ref_out.is_floating_point() and not bool(torch.isfinite(ref_out).all()):
                skipped.append(vname)
                continue
            cin = clone_all(vin)
            out = new(*cin)
            sync(device)
        reason = compare(out, ref_out)
        if reason is None:
            for i, (a, b) in enumerate(zip(cin, vin)):
                if isinstance(a, torch.Tensor) and not torch.equal(a, b):
                    reason = f"input {i} was modified"
                    break
        if reason is not None:
            return False, f"{vname}: {reason}"
        done.append(vname)
    if device == "cuda":
        unit = f"ref {ref_s * 1e3:.3f} ms"
    else:
        unit = f"ref {ref_s:.4f} s"
    msg = f"variants {','.join(done)}" + (f" (skipped {','.join(skipped)})" if skipped else "")
    msg += f"; {unit}; import+build {build_s:.1f} s"
    if notes:
        msg += "; NOTE " + "; ".join(notes)
    return True, msg


FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)


def extract_completion(text):
    """The last fenced block tagged python/py or untagged that defines class ModelNew."""
    found = None
    for lang, body in FENCE.findall(text):
        if lang.lower() in ("python", "py", "python3", "") and re.search(r"^class\s+ModelNew\b", body, re.M):
            found = body
    return found


def prebuild(manifest, tasks, backend, jobs):
    """Import every candidate of the backend in `jobs` parallel subprocesses; returns failed labels."""
    import subprocess
    snippet = ("import importlib.util as u, sys; s = u.spec_from_file_location('kbpre', sys.argv[1]); "
               "m = u.module_from_spec(s); s.loader.exec_module(m)")
    paths = []
    seen_names = set()
    for task in tasks:
        for cand in task["candidates"]:
            if cand["backend"] != backend:
                continue
            path = os.path.join(HERE, task["dir"], cand["file"])
            # same extension name => same build (and concurrent builds of one name would collide)
            src = open(path).read()
            m = re.search(r'name="([^"]+)"', src)
            key = m.group(1) if m else path
            if key in seen_names:
                continue
            seen_names.add(key)
            paths.append((f"{task['id']}/{cand['file']}", path))
    failed = []
    running = []
    t0 = time.perf_counter()
    queue = list(paths)
    env = dict(os.environ, MAX_JOBS=os.environ.get("MAX_JOBS", "1"))
    while queue or running:
        while queue and len(running) < jobs:
            label, path = queue.pop(0)
            p = subprocess.Popen([sys.executable, "-c", snippet, path], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=env, cwd=os.path.dirname(path))
            running.append((label, p))
        time.sleep(0.5)
        for item in list(running):
            label, p = item
            if p.poll() is None:
                continue
            running.remove(item)
            out = p.stdout.read().decode(errors="replace")
            if p.returncode != 0:
                failed.append(label)
                print(f"BUILD FAIL {label}:\n{out[-3000:]}", flush=True)
            else:
                print(f"built {label}", flush=True)
    print(f"prebuild: {len(paths) - len(failed)}/{len(paths)} built in {time.perf_counter() - t0:.0f} s", flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--gpu-sizes", action="store_true")
    ap.add_argument("--task", action="append", default=[])
    ap.add_argument("--cheats", action="store_true")
    ap.add_argument("--completions", action="store_true")
    ap.add_argument("--prebuild", type=int, default=0, metavar="N")
    args = ap.parse_args()

    if args.backend == "cuda":
        if not torch.cuda.is_available():
            print("SANITY: no CUDA device")
            return 2
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if hasattr(torch, "set_default_device"):
            torch.set_default_device("cuda")  # like the judge: inputs and weights created on the GPU
    device = args.backend

    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    tasks = [t for t in manifest["tasks"] if not args.task or any(s in t["id"] for s in args.task)]
    by_id = {t["id"]: t for t in manifest["tasks"]}

    passed, failed, info = 0, [], []
    t_start = time.perf_counter()
    if args.prebuild:
        failed += [f"build {x}" for x in prebuild(manifest, tasks, args.backend, args.prebuild)]
    for task in tasks:
        for cand in task["candidates"]:
            if cand["backend"] != args.backend:
                continue
            expect = cand["expect"]
            if expect != "OK" and not (args.cheats and expect == "INCORRECT"):
                continue
            label = f"{task['id']}/{cand['file']}"
            path = os.path.join(HERE, task["dir"], cand["file"])
            try:
                ok, msg = check_candidate(task, path, args, device)
            except Exception as e:  # noqa: BLE001
                ok, msg = False, f"exception: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                if expect == "OK":
                    traceback.print_exc()
            if expect == "OK":
                if ok:
                    passed += 1
                    print(f"PASS  {label}: {msg}", flush=True)
                else:
                    failed.append(label)
                    print(f"FAIL  {label}: {msg}", flush=True)
            else:
                state = "caught" if not ok else "NOT caught (passes this simple comparison)"
                info.append((label, state))
                print(f"CHEAT {label} [{expect}]: {state}: {msg}", flush=True)

    if args.completions and args.backend == "cpu":
        for comp in manifest.get("completions", []):
            if args.task and not any(s in comp["task"] for s in args.task):
                continue
            label = comp["file"]
            code = extract_completion(open(os.path.join(HERE, comp["file"])).read())
            if comp["expect"] == "COMPILE_ERROR":
                if code is None:
                    passed += 1
                    print(f"PASS  {label}: no ModelNew block (COMPILE_ERROR as expected)", flush=True)
                else:
                    failed.append(label)
                    print(f"FAIL  {label}: found a ModelNew block, expected none", flush=True)
                continue
            if code is None:
                failed.append(label)
                print(f"FAIL  {label}: no ModelNew block extracted", flush=True)
                continue
            with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
                f.write(code)
            try:
                ok, msg = check_candidate(by_id[comp["task"]], f.name, args, device)
            except Exception as e:  # noqa: BLE001
                ok, msg = False, f"exception: {type(e).__name__}: {e}"
            finally:
                os.unlink(f.name)
            if ok:
                passed += 1
                print(f"PASS  {label}: {msg}", flush=True)
            else:
                failed.append(label)
                print(f"FAIL  {label}: {msg}", flush=True)

    caught = sum(1 for _, s in info if s == "caught")
    extra = f"; INCORRECT cheats caught by this comparison: {caught}/{len(info)}" if info else ""
    print(f"SANITY ({args.backend}{', gpu sizes' if args.gpu_sizes else ''}): {passed} passed, "
          f"{len(failed)} failed{extra}; {time.perf_counter() - t_start:.0f} s total", flush=True)
    for label in failed:
        print(f"  failed: {label}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
