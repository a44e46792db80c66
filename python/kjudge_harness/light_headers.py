"""The CUDA file of a load_inline build compiled with lighter torch headers first. A candidate's
.cu usually starts with `#include <torch/extension.h>` (torch's whole C++ API, pybind11 and
Python: ~28 CPU-s of front end), though the bindings live in main.cpp; the .cu needs at most
what load_inline itself puts first in it, <torch/types.h> (ATen, the tensor factories: ~15 CPU-s).

First try: nvcc alone finds a shadow torch/extension.h that includes only <torch/types.h> (an -I
directory in front of torch's -isystem ones, given through NVCC_PREPEND_FLAGS so load_inline's
arguments, its extension version and main.cpp's command line stay as they are). When that does not
compile (the .cu used something only the full header declares), the build is redone exactly as
load_inline would do it (its versioner told to forget the failed try, which it would otherwise
skip): ninja recompiles only the .cu, main.o is up to date. Same source, same flags, so the same semantics: a
name the light header lacks is a compile error, never a different overload."""
import os

from .scoped_env import scoped_env

LIGHT_EXTENSION_H = "#pragma once\n// kjudge: the light stand-in for the .cu (see light_headers.py)\n#include <torch/types.h>\n"


def shadow_dir(ext_dir):
    """<ext_dir>/.light-headers/torch/extension.h, written once per build sandbox."""
    root = os.path.join(ext_dir, ".light-headers")
    header = os.path.join(root, "torch", "extension.h")
    if not os.path.exists(header):
        os.makedirs(os.path.dirname(header), exist_ok=True)
        with open(header, "w") as f:
            f.write(LIGHT_EXTENSION_H)
    return root


def _has_cuda(bound):
    sources = bound.get("cuda_sources")
    return bool(sources) and os.environ.get("KJUDGE_LIGHT_HEADERS", "1") != "0"


def build(load_inline, bound, ext_dir):
    """(module, mode): mode is "light", "full" (the light try failed) or "" (no CUDA file)."""
    if not _has_cuda(bound):
        return load_inline(**bound), ""
    prepend = f"-I{shadow_dir(ext_dir)} {os.environ.get('NVCC_PREPEND_FLAGS', '')}".strip()
    try:
        with scoped_env(NVCC_PREPEND_FLAGS=prepend):
            return load_inline(**fresh(bound)), "light"
    except RuntimeError as exc:  # "Error building extension ...": the full headers decide
        if "cuda.cu" not in str(exc):
            raise  # main.cpp or the link failed: the light header is not why
    return rebuild(load_inline, bound), "full"


def fresh(bound):
    """load_inline inserts its own lines into list arguments in place (the includes, the bindings):
    each call gets copies, or a retry would define the module twice."""
    return {k: list(v) if isinstance(v, list) else v for k, v in bound.items()}


def rebuild(load_inline, bound):
    """load_inline of `bound` again after a failed try in this process."""
    forget_build(bound["name"])
    return load_inline(**fresh(bound))


def forget_build(name):
    """Makes load_inline build `name` again in this process. Its versioner remembers the hash of the
    sources and flags of the failed light try (NVCC_PREPEND_FLAGS is not part of it), so the retry
    would skip the build step and import a .so that was never linked (ImportError: every candidate
    that needed the full header was COMPILE_ERROR on the H100 node)."""
    from torch.utils import cpp_extension
    entries = getattr(getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None), "entries", None)
    if not isinstance(entries, dict):
        raise RuntimeError("torch.utils.cpp_extension has no JIT_EXTENSION_VERSIONER.entries: "
                           "kjudge cannot retry a build in-process with this torch")
    entries.pop(name, None)
