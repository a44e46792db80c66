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
and the message a candidate gets is always the full headers' own.

A .cu whose torch names are all in MINIMAL_NAMES (the tensor, its dtypes and options, the
allocating factories) is tried first with less than <torch/types.h>: that header's own text with
MINIMAL_INCLUDES (the tensor, those factories' own operator headers) in place of all of ATen
(bench/results/cu-headers-20261204-cpu). It stands in for torch/types.h itself (load_inline puts
that first in every .cu: LOAD_INLINE_CU_HEAD) in its own shadow dir. One difference in meaning is
possible, and excluded: torch::empty and its kin are at::empty plus autograd's requires_grad
(torch/csrc/autograd/generated/variable_factories.h), so a .cu that says requires_grad is not
tried this way. When that try does not compile, the full one follows, as after a light try: the
scan lets through only what the minimal header declares, so such a .cu is most often wrong on its
own account, and a light try would only have repeated its error."""
import functools
import os
import re

from .scoped_env import scoped_env

LIGHT_EXTENSION_H = "#pragma once\n// kjudge: the light stand-in for the .cu (see light_headers.py)\n#include <torch/types.h>\n"
LIGHT_MAIN_H = ("#pragma once\n// kjudge: the light stand-in for main.cpp (see light_headers.py)\n#include <torch/types.h>\n"
                "#include <torch/csrc/utils/pybind.h>\n#include <torch/csrc/Exceptions.h>\n")
# what load_inline writes before a .cu's own sources
LOAD_INLINE_CU_HEAD = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
# the factories the minimal .cu header declares, with their operator headers
MINIMAL_FACTORIES = ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like")
# what the minimal header includes in place of all of ATen, autograd's factories and variables and
# the operator registry: the tensor (and what its deprecated type() returns, which model-written
# kernels still dispatch on), the dtype dispatch macros, the factories' own operator headers,
# and the tensors' operators (+, *, ==, ...: Tensor methods and empty_like; their header reads only
# that operator header when AT_PER_OPERATOR_HEADERS is set, else all of ATen's functions)
MINIMAL_INCLUDES = ("#include <ATen/core/Tensor.h>\n#include <ATen/core/DeprecatedTypeProperties.h>\n"
                    "#include <ATen/Dispatch.h>\n"
                    + "".join(f"#include <ATen/ops/{op}.h>\n" for op in MINIMAL_FACTORIES)
                    + "#ifndef AT_PER_OPERATOR_HEADERS\n#define AT_PER_OPERATOR_HEADERS\n"
                    "#include <ATen/TensorOperators.h>\n#undef AT_PER_OPERATOR_HEADERS\n"
                    "#else\n#include <ATen/TensorOperators.h>\n#endif\n")
_HEAVY_INCLUDES = re.compile(r"#include <(?:ATen/ATen\.h|torch/csrc/autograd/[\w/.]+|torch/library\.h)>\n")
# what a .cu may name after torch::, at:: or c10:: to be tried with the minimal header: the tensor,
# its dtypes (k...), options and sizes, the factories, and at::cuda and c10::cuda (their headers are
# the candidate's own includes, read as they are)
MINIMAL_NAMES = frozenset(("Tensor", "TensorOptions", "ScalarType", "Dtype", "IntArrayRef", "Device", "DeviceType",
                           "MemoryFormat", "Scalar", "Half", "BFloat16", "dtype", "device", "optional", "nullopt",
                           "cuda")
                          + MINIMAL_FACTORIES)
_QUALIFIED = re.compile(r"\b(torch|at|c10)\s*::\s*(\w+)")
# cpp sources that include one of these get the full header: parsed from text beside the light
# precompiled one, it would cost more than the light header saves
_UMBRELLA = re.compile(r"#\s*include\s*[<\"]torch/(?!extension\.h|types\.h)[^>\"]*[>\"]")


def shadow_dir(ext_dir, minimal=False):
    """<ext_dir>/.light-headers/torch/extension.h (with minimal: .minimal-headers/, and its
    torch/types.h), written once per build sandbox."""
    root = os.path.join(ext_dir, ".minimal-headers" if minimal else ".light-headers")
    headers = {"extension.h": LIGHT_EXTENSION_H, **({"types.h": minimal_types_h()} if minimal else {})}
    for name, text in headers.items():
        header = os.path.join(root, "torch", name)
        if not os.path.exists(header):
            os.makedirs(os.path.dirname(header), exist_ok=True)
            with open(header, "w") as f:
                f.write(text)
    return root


@functools.lru_cache(maxsize=1)
def minimal_types_h():
    """This torch's own torch/types.h with MINIMAL_INCLUDES in place of its heavy includes: its
    torch:: names (the dtype aliases, `using namespace at`) are kept as this version has them.
    None where its includes are not the ones known (then there is no minimal try)."""
    found = [os.path.join(d, "torch", "types.h") for d in cpp_extension_include_paths()]
    path = next((p for p in found if os.path.isfile(p)), None)
    if path is None:
        return None
    with open(path) as f:
        text = f.read()
    heavy = _HEAVY_INCLUDES.findall(text)
    if not any("ATen/ATen.h" in h for h in heavy):
        return None
    first = text.index(heavy[0])
    rest = _HEAVY_INCLUDES.sub("", text[first:])
    return ("// kjudge: the minimal stand-in for the .cu's torch/types.h (see light_headers.py), from "
            f"{path}\n" + text[:first] + MINIMAL_INCLUDES + rest)


def cpp_extension_include_paths():
    from torch.utils import cpp_extension
    return cpp_extension.include_paths()


def minimal_fits(bound):
    """The .cu names nothing of torch past MINIMAL_NAMES, no other torch header, no requires_grad;
    and this torch's torch/types.h is one the minimal header can stand in for."""
    text = sources_text(bound.get("cuda_sources"))
    if minimal_types_h() is None or any(w in text for w in ("PYBIND11", "pybind11", "py::")):
        return False  # bindings in the .cu need torch/extension.h's whole API (the full try)
    if "requires_grad" in text or _UMBRELLA.search(text):
        return False
    return all(_minimal_name(space, name) for space, name in _QUALIFIED.findall(text))


def _minimal_name(space, name):
    """torch::cuda is torch's API (torch/cuda.h, not in torch/types.h): at::cuda and c10::cuda are
    the headers a .cu includes itself."""
    if space == "torch" and name == "cuda":
        return False
    return name in MINIMAL_NAMES or re.fullmatch(r"k[A-Z]\w*", name) is not None


def sources_text(sources):
    """A load_inline sources argument (a string or a list of them) as one text."""
    return "\n".join([sources] if isinstance(sources, str) else list(sources or []))


def _enabled():
    return os.environ.get("KJUDGE_LIGHT_HEADERS", "1") != "0"


def _has_cuda(bound):
    return bool(bound.get("cuda_sources")) and _enabled()


def light_main_dir(pch_dir, bound):
    """pch/light when it was made and the cpp sources need nothing past it, else None."""
    light = os.path.join(pch_dir, "light") if pch_dir else ""
    if not light or not os.path.isdir(os.path.join(light, "torch", "extension.h.gch")) or not _enabled():
        return None
    return None if _UMBRELLA.search(sources_text(bound.get("cpp_sources"))) else light


def build(load_inline, bound, ext_dir, pch_dir=None):
    """(module, mode): mode is "minimal" (the .cu with the minimal header, main.cpp light), "light"
    (the light tries compiled), "full" (one did not: redone with the full headers) or "" (nothing
    light to try). pch_dir: the precompiled headers' dir, or None."""
    light_cu, light_main = _has_cuda(bound), light_main_dir(pch_dir, bound)
    if not (light_cu or light_main):
        return load_inline(**included(bound, pch_dir)), ""
    # a .cu the scan lets through that then does not compile is most often the candidate's own
    # error, which a light try would only repeat: the full headers follow any failed try
    mode = "minimal" if light_cu and minimal_fits(bound) else "light"
    # the .cu's shadow headers are written only for a build that has a .cu
    env = {"NVCC_PREPEND_FLAGS": f"-I{shadow_dir(ext_dir, mode == 'minimal')} "
                                 f"{os.environ.get('NVCC_PREPEND_FLAGS', '')}".strip()} if light_cu else {}
    try:
        with scoped_env(**env):
            return load_inline(**included(fresh(bound), light_main or pch_dir)), mode
    except RuntimeError as exc:  # "Error building extension ...": the full headers decide
        failed = failed_files(str(exc))
        if not ((light_cu and failed["cuda"]) or (light_main and failed["main"])):
            raise  # the link failed, or a file compiled with the full header: the headers are not why
    return rebuild(load_inline, included(bound, pch_dir)), "full"


def failed_files(text):
    """Which of load_inline's two files did not compile, from ninja's "FAILED: main.o" lines in
    torch's message (its other lines name both files' commands); by name where it has none."""
    failed = re.findall(r"FAILED: (\S+)", text)
    if not failed:
        return {"main": "main.cpp" in text, "cuda": "cuda.cu" in text}
    return {"main": any(f.startswith("main.") for f in failed), "cuda": any(f.startswith("cuda.") for f in failed)}


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
