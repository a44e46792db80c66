"""A load_inline build's two files compiled with lighter torch headers first.

The .cu usually starts with `#include <torch/extension.h>` (torch's whole C++ API, pybind11 and
Python: ~28 CPU-s of front end), though the bindings live in main.cpp; it needs at most what
load_inline itself puts first in it, <torch/types.h> (ATen, the tensor factories: ~15 CPU-s). nvcc
alone finds a shadow torch/extension.h that includes only that (an -I directory in front of torch's
-isystem ones, given through NVCC_PREPEND_FLAGS so load_inline's arguments stay as they are).

main.cpp (load_inline's `#include <torch/extension.h>`, the cpp sources, the bindings) is compiled
by g++ on every backend; even with torch/extension.h precompiled, GCC spends ~18 s of a 2-core
machine on the templates the whole API leaves pending and the code they generate, whatever the
file holds. The bindings need only ATen, pybind11's casters and torch's error wrapper
(LIGHT_MAIN_H, precompiled beside the full header in pch/light, pch.py): ~7 s. It is put in front of
the include path when the cpp sources name no other torch umbrella header.

When a light try does not compile, the build is redone exactly as load_inline would do it (its
versioner told to forget the failed try, which it would otherwise skip): same source, same flags,
so the same semantics: a name a light header lacks is a compile error, never a different overload,
and the message a candidate gets is always the full headers' own."""
import os
import re

from .scoped_env import scoped_env

LIGHT_EXTENSION_H = "#pragma once\n// kjudge: the light stand-in for the .cu (see light_headers.py)\n#include <torch/types.h>\n"
LIGHT_MAIN_H = ("#pragma once\n// kjudge: the light stand-in for main.cpp (see light_headers.py)\n#include <torch/types.h>\n"
                "#include <torch/csrc/utils/pybind.h>\n#include <torch/csrc/Exceptions.h>\n")
# cpp sources that include one of these get the full header: parsed from text beside the light
# precompiled one, it would cost more than the light header saves
_UMBRELLA = re.compile(r"#\s*include\s*[<\"]torch/(?!extension\.h|types\.h)[^>\"]*[>\"]")


def shadow_dir(ext_dir):
    """<ext_dir>/.light-headers/torch/extension.h, written once per build sandbox."""
    root = os.path.join(ext_dir, ".light-headers")
    header = os.path.join(root, "torch", "extension.h")
    if not os.path.exists(header):
        os.makedirs(os.path.dirname(header), exist_ok=True)
        with open(header, "w") as f:
            f.write(LIGHT_EXTENSION_H)
    return root


def _enabled():
    return os.environ.get("KJUDGE_LIGHT_HEADERS", "1") != "0"


def _has_cuda(bound):
    return bool(bound.get("cuda_sources")) and _enabled()


def light_main_dir(pch_dir, bound):
    """pch/light when it was made and the cpp sources need nothing past it, else None."""
    light = os.path.join(pch_dir, "light") if pch_dir else ""
    if not light or not os.path.isdir(os.path.join(light, "torch", "extension.h.gch")) or not _enabled():
        return None
    sources = bound.get("cpp_sources")
    text = "\n".join([sources] if isinstance(sources, str) else list(sources or []))
    return None if _UMBRELLA.search(text) else light


def build(load_inline, bound, ext_dir, pch_dir=None):
    """(module, mode): mode is "light" (the light tries compiled), "full" (one did not: redone with
    the full headers) or "" (nothing light to try). pch_dir: the precompiled headers' dir, or None."""
    light_cu, light_main = _has_cuda(bound), light_main_dir(pch_dir, bound)
    if not (light_cu or light_main):
        return load_inline(**included(bound, pch_dir)), ""
    # the .cu's shadow header is written only for a build that has a .cu
    env = {"NVCC_PREPEND_FLAGS": f"-I{shadow_dir(ext_dir)} {os.environ.get('NVCC_PREPEND_FLAGS', '')}".strip()} \
        if light_cu else {}
    try:
        with scoped_env(**env):
            return load_inline(**included(fresh(bound), light_main or pch_dir)), "light"
    except RuntimeError as exc:  # "Error building extension ...": the full headers decide
        text = str(exc)
        if not ((light_cu and "cuda.cu" in text) or (light_main and "main.cpp" in text)):
            raise  # the link failed, or a file compiled with the full header: the light ones are not why
    return rebuild(load_inline, included(bound, pch_dir)), "full"


def included(bound, include_dir):
    """`bound` with include_dir first on its include path (its headers found before torch's)."""
    if not include_dir:
        return bound
    return dict(bound, extra_include_paths=[include_dir] + list(bound.get("extra_include_paths") or []))


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
