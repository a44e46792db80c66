"""PCH role (compile sandbox, once per node and torch version): a precompiled torch/extension.h
built with exactly the flags load_inline uses (read from the build.ninja it writes), one variant
per optimisation level in a .gch directory (GCC tries each). Takes a C++ load_inline build
from ~17-26 s to ~7-12 s on a 2-core machine. Beside it, pch/light/: the same for the light
main.cpp header (light_headers.LIGHT_MAIN_H), when this torch has the headers it names."""
import concurrent.futures
import inspect
import os
import shlex
import shutil
import subprocess

import torch
import torch.utils.cpp_extension as cpp_extension

from .light_headers import LIGHT_MAIN_H

VARIANTS = {"O0": [], "O2": ["-O2"], "O3": ["-O3"]}


def call_private(fn, **known):
    """Calls one of torch's private cpp_extension helpers across torch versions: arguments it no
    longer takes are dropped, and ones added since (torch 2.6's extra_sycl_cflags, with_sycl...)
    get their off value ([] for extra_*, False for with_*). Anything else it requires is an error."""
    params = inspect.signature(fn).parameters
    args = {k: v for k, v in known.items() if k in params}
    for name, p in params.items():
        if name in args or p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name.startswith("extra_"):
            args[name] = []
        elif name.startswith("with_"):
            args[name] = False
        else:
            raise TypeError(f"{fn.__name__} of torch {torch.__version__} needs {name!r}, which kjudge does not know")
    return fn(**args)


def include_paths(with_cuda):
    """cpp_extension.include_paths: a bool `cuda` before torch 2.6, a `device_type` string since."""
    first = next(iter(inspect.signature(cpp_extension.include_paths).parameters), "")
    if first == "device_type":
        return cpp_extension.include_paths("cuda" if with_cuda else "cpu")
    return cpp_extension.include_paths(with_cuda)


# torch's ninja writer works out nvcc's arch flags even though only the g++ flags are read here;
# in the compile sandbox no GPU is visible, and without an arch list it fails (IndexError), so the
# cuda variant of the header was never built on a GPU node
FALLBACK_ARCH_LIST = "8.0"  # known to torch 1.13 through 2.11; its nvcc flags go unused


def run(request, report):
    out_dir = request["pch_out"]
    with_cuda = bool(request.get("with_cuda"))
    if with_cuda:
        os.environ["TORCH_CUDA_ARCH_LIST"] = request.get("arch_list") or FALLBACK_ARCH_LIST
    probe = os.path.join(out_dir, "probe")
    os.makedirs(probe, exist_ok=True)
    src = os.path.join(probe, "main.cpp")
    with open(src, "w") as f:
        f.write("#include <torch/extension.h>\n")
    call_private(cpp_extension._write_ninja_file_to_build_library,
                 path=os.path.join(probe, "build.ninja"), name="kjudge_pch", sources=[src], extra_cflags=[],
                 extra_cuda_cflags=[], extra_ldflags=[], extra_include_paths=[], with_cuda=with_cuda,
                 is_standalone=False)
    cflags = []
    with open(os.path.join(probe, "build.ninja")) as f:
        for line in f:
            if line.startswith("cflags = "):
                cflags = [a for a in shlex.split(line[len("cflags = "):]) if not a.startswith("-DTORCH_EXTENSION_NAME=")]
    header = None
    for inc in include_paths(with_cuda):
        if os.path.exists(os.path.join(inc, "torch", "extension.h")):
            header = os.path.join(inc, "torch", "extension.h")
            break
    if not cflags or header is None:
        raise RuntimeError("could not find load_inline's compile flags or torch/extension.h")
    variants = request.get("variants", ["O0", "O2", "O3"])
    full = os.path.join(out_dir, "pch", "torch", "extension.h")
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(header, full)
    precompile(full, cflags, variants)
    # the node's kernelbench.light_headers; off, the log says so (an empty light_error reads as made)
    report["light"] = precompile_light(os.path.join(out_dir, "pch", "light"), cflags, variants) \
        if request.get("light", True) else "off: kernelbench.light_headers = false"
    report["flags"] = cflags
    report["ok"] = True
    return report


def precompile(header, cflags, variants):
    """`header`'s .gch directory beside it, one variant each, two compiles at a time (each ~1.2 GB
    of the sandbox's 4 GiB; the first jobs of a node wait for all of them)."""
    gch = header + ".gch"
    os.makedirs(gch, exist_ok=True)

    def compile_variant(name):
        cmd = [os.environ.get("CXX", "c++"), "-x", "c++-header"] + cflags + VARIANTS[name] + [
            header, "-o", os.path.join(gch, name + ".gch")]
        subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(compile_variant, variants))  # a failed compile raises here


def precompile_light(include_dir, cflags, variants):
    """<include_dir>/torch/extension.h, the light main.cpp header (a file: the build sandbox reads
    it where a mismatched variant leaves GCC the text), precompiled; "" when that worked, else why
    not (no light dir then: builds use the full header, as before)."""
    header = os.path.join(include_dir, "torch", "extension.h")
    os.makedirs(os.path.dirname(header), exist_ok=True)
    with open(header, "w") as f:
        f.write(LIGHT_MAIN_H)
    try:
        precompile(header, cflags, variants)
        return ""
    except subprocess.CalledProcessError as exc:  # a torch without one of the headers it names
        shutil.rmtree(include_dir, ignore_errors=True)
        return (exc.stdout or b"").decode(errors="replace")[-500:] or str(exc)
