"""The .cu of each candidate compiled by nvcc as load_inline writes it, once with the light shadow
header (torch/extension.h -> torch/types.h) and once with the minimal one where the harness would
try it (light_headers.minimal_fits): CPU seconds of each compile, whether it compiled, and the
share of candidates the minimal try takes. Candidates' load_inline calls are read by running
their module with load_inline replaced (nothing is built); no GPU is needed.

  python3 bench/build_bench/cu_headers.py CANDIDATE.py... [--torch-include DIR] [--arch 90a]

--torch-include: another torch's include dir (e.g. an unpacked wheel's torch/include), else the
installed torch's. Prints a JSON line per .cu, then one with the summary."""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from kjudge_harness import light_headers  # noqa: E402

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
# torch's own nvcc flags for a load_inline .cu (cpp_extension.COMMON_NVCC_FLAGS and what it adds)
TORCH_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                    "--expt-relaxed-constexpr", "--compiler-options", "-fPIC", "-std=c++17"]


def cuda_sources(candidate):
    """The cuda_sources of every load_inline call the candidate's module makes at import."""
    import torch.utils.cpp_extension as cpp_extension
    calls, real = [], cpp_extension.load_inline

    class Module:
        def __getattr__(self, name):
            return lambda *a, **k: None

    def record(*args, **kwargs):
        names = ["name", "cpp_sources", "cuda_sources"]
        calls.append({**dict(zip(names, args)), **kwargs})
        return Module()
    cpp_extension.load_inline = record
    try:
        exec(compile(Path(candidate).read_text(), candidate, "exec"), {"__name__": "candidate"})
    except Exception as exc:  # noqa: BLE001 -- what it did after its load_inline calls is not measured
        print(f"# {candidate}: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        cpp_extension.load_inline = real
    return [c for c in calls if c.get("cuda_sources")]


def compile_cu(source, shadow, includes, arch, workdir):
    """(CPU seconds of the children, compiled) of nvcc -c on load_inline's .cu of `source`."""
    cu = Path(workdir) / "cuda.cu"
    cu.write_text(light_headers.LOAD_INLINE_CU_HEAD + source)
    cmd = [NVCC, "-I" + shadow, "-c", str(cu), "-o", str(Path(workdir) / "cuda.o"),
           f"-gencode=arch=compute_{arch},code=sm_{arch}", "-O2"] + TORCH_NVCC_FLAGS
    cmd += [f for d in includes for f in ("-isystem", d)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ok = subprocess.run(cmd, capture_output=True).returncode == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, ok


def include_dirs(torch_include):
    if not torch_include:
        return light_headers.cpp_extension_include_paths()
    return [torch_include, os.path.join(torch_include, "torch", "csrc", "api", "include")]


def measure(candidates, includes, arch):
    light_headers.cpp_extension_include_paths = lambda: includes  # the headers compiled against
    light_headers.minimal_types_h.cache_clear()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        light, minimal = light_headers.shadow_dir(work), light_headers.shadow_dir(work, True)
        for cand in candidates:
            for call in cuda_sources(cand):
                source = light_headers.sources_text(call["cuda_sources"])
                row = {"candidate": cand, "minimal_fits": light_headers.minimal_fits(call)}
                row["light_cpu_s"], row["light_ok"] = compile_cu(source, light, includes, arch, work)
                if row["minimal_fits"]:
                    row["minimal_cpu_s"], row["minimal_ok"] = compile_cu(source, minimal, includes, arch, work)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def summary(rows):
    tried = [r for r in rows if r["minimal_fits"]]
    took = [r for r in tried if r.get("minimal_ok")]
    light_all = sum(r["light_cpu_s"] for r in rows)
    # what the harness spends: the minimal compile where it compiled; where it did not, that try and
    # the full one after it (counted as the light one: a lower bound); the light one alone where the
    # scan kept the minimal try away
    harness = sum(r["minimal_cpu_s"] + (0 if r["minimal_ok"] else r["light_cpu_s"]) if r["minimal_fits"]
                  else r["light_cpu_s"] for r in rows)
    return {"cu_files": len(rows), "minimal_tried": len(tried), "minimal_compiled": len(took),
            "light_failed": sum(not r["light_ok"] for r in rows),
            "light_cpu_s_per_cu": round(light_all / max(len(rows), 1), 2),
            "with_minimal_cpu_s_per_cu": round(harness / max(len(rows), 1), 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--torch-include", default="")
    ap.add_argument("--arch", default="90a")
    args = ap.parse_args()
    t0 = time.time()
    rows = measure(args.candidates, include_dirs(args.torch_include), args.arch)
    print(json.dumps({"summary": summary(rows), "wall_s": round(time.time() - t0, 1),
                      "torch_include": args.torch_include or "installed", "arch": args.arch}))


if __name__ == "__main__":
    main()
