"""Compile check of the fidelity corpus on a machine without a GPU.

For each candidate file: the module is executed with torch's `load_inline` replaced by a recorder
(nothing is built, no kernel runs), so the exact `cpp_sources`, `cuda_sources`, `functions` and
flags the candidate passes are captured. Then:

  1. the `.cu` is written as `load_inline` writes it (`#include <torch/types.h>`, `<cuda.h>`,
     `<cuda_runtime.h>` first, then the candidate's CUDA source), followed by the candidate's
     `cpp_sources` declarations and a reference to every function in `functions` (a declaration
     that does not match the definition makes the reference ambiguous: an error), and compiled with
     `nvcc -arch=sm_90 -std=c++17 -c` against torch's headers (`torch.utils.cpp_extension.include_paths()`),
     with the candidate's own `extra_cuda_cflags`; `<torch/extension.h>` is served by a light
     header that includes `<torch/types.h>`, as kjudge's build role does first;
  2. `ModelNew(*get_init_inputs())` and `Model(*get_init_inputs())` of the KernelBench reference are
     built on the CPU with the same seed: their parameters must have the same names' order, shapes
     and values (kjudge and KernelBench both rely on equal weights from the same seed), and the
     constructor and forward must take the same number of arguments.

Usage: /usr/bin/python3 bench/fidelity/compile_check.py [--kb-root DIR] [--jobs N] [--only SUBSTR...]
       [--no-nvcc] [--manifest corpus.json] [--extra FILE...]
Writes one line per candidate and a summary; exit status 1 when any check failed.
Needs a python with torch (CPU is enough: Debian's python3-torch) and nvcc.
"""
import argparse
import concurrent.futures
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
import threading
_PY_LOCK = threading.Lock()  # load_inline is swapped process-wide while a module runs


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, name=None, cpp_sources=None, cuda_sources=None, functions=None, **kw):
        self.calls.append({"name": name, "cpp_sources": cpp_sources, "cuda_sources": cuda_sources,
                           "functions": functions, **kw})
        rec = self

        class _Ext(types.SimpleNamespace):
            def __getattr__(self, attr):  # the candidate's forward is never called here
                if attr.startswith("__"):
                    raise AttributeError(attr)
                return lambda *a, **k: None
        del rec
        return _Ext()


def _as_list(v):
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def load_module(path, name, recorder=None):
    import torch.utils.cpp_extension as cpp_ext
    saved = cpp_ext.load_inline
    if recorder is not None:
        cpp_ext.load_inline = recorder
    try:
        mod = types.ModuleType(name)
        mod.__file__ = path
        code = compile(open(path).read(), path, "exec")
        exec(code, mod.__dict__)  # noqa: S102 - our own corpus file, load_inline replaced
        return mod
    finally:
        cpp_ext.load_inline = saved


def write_cu(call, path):
    parts = ["#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"]
    parts += _as_list(call["cuda_sources"])
    parts.append("\n// ---- cpp_sources declarations (main.cpp's view) ----\n")
    parts += _as_list(call["cpp_sources"])
    refs = ", ".join("(void*)&%s" % f for f in call["functions"] or [])
    parts.append("\nstatic void* kj_compile_check_refs[] __attribute__((unused)) = {%s};\n" % refs)
    with open(path, "w") as f:
        f.write("\n".join(parts))


def nvcc_check(call, workdir, includes):
    cu = os.path.join(workdir, (call["name"] or "ext") + ".cu")
    write_cu(call, cu)
    light = os.path.join(workdir, "light", "torch")
    os.makedirs(light, exist_ok=True)
    with open(os.path.join(light, "extension.h"), "w") as f:
        f.write("#pragma once\n#include <torch/types.h>\n")
    flags = [fl for fl in _as_list(call.get("extra_cuda_cflags")) if fl.startswith(("-O", "--use_fast_math", "-D", "--ftz", "-lineinfo", "--expt", "-Xptxas"))]
    cmd = ["nvcc", "-arch=sm_90", "-std=c++17", "-c", cu, "-o", cu + ".o", "-I" + os.path.join(workdir, "light"),
           "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
           "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr", "-w"] + ["-I" + i for i in includes] + flags
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    errors = [ln for ln in (p.stdout + p.stderr).splitlines() if "error" in ln]
    return p.returncode == 0, round(time.time() - t, 1), errors[:5]


def python_check(cand_path, ref_path):
    import torch
    rec = Recorder()
    cand = load_module(cand_path, "candidate", rec)
    ref = load_module(ref_path, "reference")
    problems = []
    if not rec.calls:
        problems.append("no load_inline call")
    for c in rec.calls:
        if not _as_list(c["cuda_sources"]):
            problems.append("load_inline without cuda_sources")
    init = ref.get_init_inputs()
    n_init = len(inspect.signature(ref.Model.__init__).parameters)
    if len(inspect.signature(cand.ModelNew.__init__).parameters) != n_init:
        problems.append("ModelNew.__init__ takes a different number of arguments than Model.__init__")
    if len(inspect.signature(cand.ModelNew.forward).parameters) != len(inspect.signature(ref.Model.forward).parameters):
        problems.append("ModelNew.forward takes a different number of arguments than Model.forward")
    torch.manual_seed(1234)
    m = ref.Model(*init)
    torch.manual_seed(1234)
    n = cand.ModelNew(*init)
    pm, pn = list(m.parameters()), list(n.parameters())
    if len(pm) != len(pn) or any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(pm, pn)):
        problems.append("parameters differ from Model's for the same seed (%d vs %d tensors)" % (len(pm), len(pn)))
    return rec.calls, problems


def check_one(entry, kb_root, includes, use_nvcc):
    cand = os.path.join(HERE, entry["candidate"])
    ref = os.path.join(kb_root, entry["problem"])
    row = {"candidate": entry["candidate"], "ok": True, "notes": []}
    try:
        with _PY_LOCK:
            calls, problems = python_check(cand, ref)
    except Exception as exc:  # noqa: BLE001
        return {**row, "ok": False, "notes": ["python: %s: %s" % (type(exc).__name__, exc)]}
    if problems:
        row["ok"] = False
        row["notes"] += problems
    if use_nvcc:
        with tempfile.TemporaryDirectory(prefix="kjcc-") as d:
            for c in calls:
                ok, secs, errors = nvcc_check(c, d, includes)
                row["nvcc_s"] = row.get("nvcc_s", 0) + secs
                if not ok:
                    row["ok"] = False
                    row["notes"] += ["nvcc %s: %s" % (c["name"], e) for e in errors] or ["nvcc %s failed" % c["name"]]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb-root", default=os.path.normpath(os.path.join(HERE, "../../../shared/kernelbench")))
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--extra", nargs="*", default=[], help="problem=candidate pairs outside the manifest (e.g. noise/)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--no-nvcc", action="store_true")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args()
    import torch.utils.cpp_extension as cpp_ext
    includes = cpp_ext.include_paths()
    entries = json.load(open(a.manifest))
    entries += [{"problem": e.split("=", 1)[0], "candidate": e.split("=", 1)[1]} for e in a.extra]
    if a.only:
        entries = [e for e in entries if any(s in e["candidate"] for s in a.only)]
    print("# compile_check: %d candidates, nvcc %s, torch headers %s" % (
        len(entries), "off" if a.no_nvcc else subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
        includes[0]), flush=True)
    rows = []
    # python checks import torch in this process; nvcc runs in parallel threads
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for row in pool.map(lambda e: check_one(e, a.kb_root, includes, not a.no_nvcc), entries):
            rows.append(row)
            print("%-4s %-62s %6s  %s" % ("ok" if row["ok"] else "FAIL", row["candidate"],
                                         "%.0fs" % row["nvcc_s"] if "nvcc_s" in row else "-", "; ".join(row["notes"])), flush=True)
    bad = [r for r in rows if not r["ok"]]
    print("# %d of %d pass" % (len(rows) - len(bad), len(rows)))
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
