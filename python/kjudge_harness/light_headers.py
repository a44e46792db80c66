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

When a shortcut try fails in any way, the build is redone exactly as load_inline would do it (its
versioner told to forget the failed try, which it would otherwise skip): same source, same flags,
so the same semantics: a name a light header lacks is a compile error, never a different overload,
and the message a candidate gets is always the full headers' own. Whatever failed (the .cu,
main.cpp, the link, the import) goes to the full headers: reading ninja's text to spare a retry
broke when ninja 1.12 wrote "FAILED: [code=1] cuda.cuda.o" (issue 53: honest kernels whose light
try failed were COMPILE_ERROR with the light header's message).

A shortcut must never compile a program the full headers refuse, nor give one another meaning.
A light header declares a subset of torch's names, so only a name the full headers add can change
the result, through a lookup that is not qualified: code inside torch's namespaces or with them
brought into its scope (`using namespace torch`, SCOPE_HAZARD: no shortcut for that file); a
global name, or one of std's under `using namespace std`, that only the full closure's system
headers declare (the light headers include Python.h, frameobject.h and FULL_ONLY_STD, the minimal one the
standard headers ATen brings); a macro or a name of torch's Python API only the full headers
define (FULL_ONLY_NAMES: no shortcut for a file naming one); or, for the minimal header, which
lacks ATen's functions, a function of the candidate's own with an ATen operator's name and a
tensor parameter, which the full headers' ADL would find twice (ambiguous: no minimal try).
tests/python/builds/test_build_corpus.py compares the closures' headers and macros on the installed
torch, and builds model-style programs of every class both ways.

A .cu whose torch names are all in MINIMAL_NAMES (the tensor, its dtypes and options, the
allocating factories) is tried first with less than <torch/types.h>: that header's own text with
MINIMAL_INCLUDES (the tensor, those factories' own operator headers) in place of all of ATen
(bench/results/cu-headers-20261204-cpu). It stands in for torch/types.h itself (load_inline puts
that first in every .cu: LOAD_INLINE_CU_HEAD) in its own shadow dir. torch::empty and its kin are
at::empty plus autograd's requires_grad (torch/csrc/autograd/generated/variable_factories.h), so a
.cu that says requires_grad is not tried this way. tests/build_corpus holds model-style programs
whose compile result kjudge's build must share with plain load_inline."""
import functools
import os
import re

from .scoped_env import scoped_env

# the standard headers in torch/extension.h's closure (pybind11's, torch's API's) and not in
# torch/types.h's: their names are std's (read unqualified under `using namespace std`) and
# <cxxabi.h>'s global `abi` (tests/python/builds/test_build_corpus.py compares the closures)
FULL_ONLY_STD = ("cxxabi.h", "forward_list", "queue", "stack", "valarray")
# Python.h and frameobject.h (which pybind11 adds): the global names torch/extension.h brings
# besides torch's own (Python's C API and its C library headers)
LIGHT_EXTENSION_H = ("#pragma once\n// kjudge: the light stand-in for the .cu (see light_headers.py)\n"
                     "#include <Python.h>\n#include <frameobject.h>\n#include <torch/types.h>\n"
                     + "".join(f"#include <{h}>\n" for h in FULL_ONLY_STD))
LIGHT_MAIN_H = ("#pragma once\n// kjudge: the light stand-in for main.cpp (see light_headers.py)\n#include <torch/types.h>\n"
                "#include <torch/csrc/utils/pybind.h>\n#include <torch/csrc/Exceptions.h>\n#include <queue>\n")
# what load_inline writes before a .cu's own sources
LOAD_INLINE_CU_HEAD = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
# the factories the minimal .cu header declares, with their operator headers
MINIMAL_FACTORIES = ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like")
# what the minimal header includes in place of all of ATen, autograd's factories and variables and
# the operator registry: the tensor (and what its deprecated type() returns, which model-written
# kernels still dispatch on), the dtype dispatch macros, the factories' own operator headers,
# the standard headers ATen brings and the rest not (std's names, as FULL_ONLY_STD),
# and the tensors' operators (+, *, ==, ...: Tensor methods and empty_like; their header reads only
# that operator header when AT_PER_OPERATOR_HEADERS is set, else all of ATen's functions)
MINIMAL_INCLUDES = ("#include <ATen/core/Tensor.h>\n#include <ATen/core/DeprecatedTypeProperties.h>\n"
                    "#include <ATen/Dispatch.h>\n#include <bitset>\n#include <list>\n#include <thread>\n"
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
# code that reads torch's, ATen's, c10's or pybind11's names unqualified: inside their namespaces,
# or with them brought into its own scope; and pybind11 itself, which the .cu's light headers omit
SCOPE_HAZARD = re.compile(r"\b(?:using\s+namespace\s+(?:::\s*)?(?:torch|at|c10|pybind11|py)\b"
                          r"|namespace\s+(?:torch|at|c10|pybind11|py)\s*(?:\{|::))")
_PYBIND = re.compile(r"PYBIND11|pybind11|\bpy\b")  # py: torch's global alias of pybind11
# names only the full headers declare, other than std's (FULL_ONLY_STD): torch's Python API
# (THP...; its alias py is _PYBIND's) and the macros of torch's whole C++ API and
# pybind11's; a use of one (#if TORCH_VERSION_MAJOR, a global `py`) may read differently
# with a light header (test_build_corpus.py checks the macros against the headers)
FULL_ONLY_NAMES = re.compile(
    r"\b(?:THP\w*|AT_(?:BLAS_\w+|BUILD_WITH_\w+|\w+_ENABLED|MKL_SEQUENTIAL|PARALLEL_\w+|USE_EIGEN_SPARSE)"
    r"|C10_\w*_TLS_\w+|CAFFE2_\w+|CATCH_\w+|(?:END_)?HANDLE_TH_\w+|FORALL_\w+|FORWARD_HAS_DEFAULT_ARGS"
    r"|IS_PYBIND\w*|PYTHONCAPI_COMPAT|Py(?:HASH|Time)_\w+|Py_\w+|ROLLBEAR_\w+|SOFT_ASSERT|STRONG_HAS_\w+"
    r"|TORCH_(?:ABI_VERSION|ARG|ENUM_\w+|MODULE\w*|OPTIONS_CTOR_\w+|UNUSED_EXCEPT_CUDA|VERSION\w*)"
    # and the operator registry's and the profiler's, which torch/types.h has and the minimal one not
    r"|RECORD_\w+|(?:MAKE_)?TORCH_LIBRARY\w*|TORCH_(?:FN\w*|IMPL_FUNC|META_FUNC\w*|PRECOMPUTE_\w+|SELECTIVE_\w+"
    r"|PYTHON_API)|BUILD_FEATURE_\w+|EXPECTED_MAX_LEVEL|HAS_IMPL_ABSTRACT_PYSTUB|HAS_PT2_COMPLIANT_TAG)\b")
# Tensor::index and index_put_ take at::indexing::TensorIndex, which the minimal header only
# forward-declares: such a .cu goes to the light try at once
_NEEDS_INDEXING = re.compile(r"\.\s*index(?:_put_)?\s*\(|\bindexing\s*::")
# `name(params) {`: a function definition (a call is never followed by a body)
_FUNCTION_DEFINITION = re.compile(r"\b(\w+)\s*\(([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*)\)\s*(?:const\s*)?\{")


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
    """The .cu names nothing of torch past MINIMAL_NAMES, no other torch header, no requires_grad,
    no method that takes ATen's index types, and defines no function that ATen's own would make
    ambiguous; and this torch's torch/types.h is one the minimal header can stand in for."""
    text = sources_text(bound.get("cuda_sources"))
    if minimal_types_h() is None or _NEEDS_INDEXING.search(text) or not _cu_shortcut_safe(text):
        return False
    if "requires_grad" in text or _UMBRELLA.search(text) or _shadows_an_aten_function(text):
        return False
    return all(_minimal_name(space, name) for space, name in _QUALIFIED.findall(text))


def _minimal_name(space, name):
    """torch::cuda is torch's API (torch/cuda.h, not in torch/types.h): at::cuda and c10::cuda are
    the headers a .cu includes itself."""
    if space == "torch" and name == "cuda":
        return False
    return name in MINIMAL_NAMES or re.fullmatch(r"k[A-Z]\w*", name) is not None


def shortcut_safe(text):
    """No code of this file's reads torch's or pybind11's namespaces unqualified (SCOPE_HAZARD):
    only there could a name a light header lacks change what compiles."""
    return not SCOPE_HAZARD.search(text) and not FULL_ONLY_NAMES.search(text)


def _cu_shortcut_safe(text):
    """shortcut_safe, and no pybind11 in the .cu (its light headers leave pybind11 out)."""
    return shortcut_safe(text) and not _PYBIND.search(text)


def _shadows_an_aten_function(text):
    """A function of the candidate's own, named like an ATen operator, taking a tensor: a call of it
    with tensors finds ATen's too (ADL on at::Tensor) under the full headers, not the minimal one."""
    ops = aten_operator_names()
    return any(name in ops for name, params in _FUNCTION_DEFINITION.findall(text) if "Tensor" in params)


@functools.lru_cache(maxsize=1)
def aten_operator_names():
    """The installed torch's ATen operators (ATen/ops/<name>.h), as at:: functions."""
    for d in cpp_extension_include_paths():
        ops = os.path.join(d, "ATen", "ops")
        if os.path.isdir(ops):
            return frozenset(f[:-2] for f in os.listdir(ops) if f.endswith(".h") and "_ops" not in f
                             and "_native" not in f and "_compositeexplicit" not in f
                             and "_compositeimplicit" not in f and "_dispatch" not in f)
    return frozenset()


def sources_text(sources):
    """A load_inline sources argument (a string or a list of them) as one text."""
    return "\n".join([sources] if isinstance(sources, str) else list(sources or []))


def _enabled():
    return os.environ.get("KJUDGE_LIGHT_HEADERS", "1") != "0"


def _light_cu(bound):
    """The .cu gets a light try: there is one, the node allows it, and shortcut_safe."""
    return bool(bound.get("cuda_sources")) and _enabled() and _cu_shortcut_safe(sources_text(bound["cuda_sources"]))


def light_main_dir(pch_dir, bound):
    """pch/light when it was made and the cpp sources need nothing past it, else None."""
    light = os.path.join(pch_dir, "light") if pch_dir else ""
    if not light or not os.path.isdir(os.path.join(light, "torch", "extension.h.gch")) or not _enabled():
        return None
    text = sources_text(bound.get("cpp_sources"))
    return None if _UMBRELLA.search(text) or not shortcut_safe(text) else light


def build(load_inline, bound, ext_dir, pch_dir=None):
    """(module, mode): mode is "minimal" (the .cu with the minimal header, main.cpp light), "light"
    (the light tries compiled), "full" (one did not: redone with the full headers) or "" (nothing
    light to try). pch_dir: the precompiled headers' dir, or None."""
    light_cu, light_main = _light_cu(bound), light_main_dir(pch_dir, bound)
    if not (light_cu or light_main):
        return load_inline(**included(bound, pch_dir)), ""
    mode = "minimal" if light_cu and minimal_fits(bound) else "light"
    # the .cu's shadow headers are written only for a build that has a .cu
    env = {"NVCC_PREPEND_FLAGS": f"-I{shadow_dir(ext_dir, mode == 'minimal')} "
                                 f"{os.environ.get('NVCC_PREPEND_FLAGS', '')}".strip()} if light_cu else {}
    try:
        with scoped_env(**env):
            return load_inline(**included(fresh(bound), light_main or pch_dir)), mode
    except Exception:  # noqa: BLE001 - any failure of a shortcut: the full headers decide, as load_inline alone
        pass
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
