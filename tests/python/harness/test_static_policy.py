"""kjudge_harness.static_policy: the static pre-check of KernelBench candidates (no torch needed)."""

import json
import textwrap

import pytest

from kjudge_harness import static_policy as sp

# ---------------------------------------------------------------------------------------------
# honest candidates

CPU_HONEST = '''
"""A fused ReLU for the CPU. Nothing here uses exec; the comment below mentions it only."""
import os
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline as li

os.environ.setdefault("OMP_NUM_THREADS", "4")
cpp_source = r"""
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
    auto out = torch::empty_like(x);
    auto* src = x.data_ptr<float>();
    auto* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] > 0 ? src[i] : 0;  // exec-free
    return out;
}
"""

try:
    relu_ext = li(name="relu_ext", cpp_sources=cpp_source, functions=["relu_forward"], verbose=False)
except Exception as e:  # report the build error when forward runs
    relu_ext = None
    BUILD_ERROR = f"build failed: {e}"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def _check(self):
        pass

    def forward(self, x):
        self._check()
        return relu_ext.relu_forward(x.contiguous())
'''

CUDA_HONEST = '''
import torch
import torch.nn as nn
from torch.utils import cpp_extension

cuda_src = """
__global__ void scale_kernel(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
    return y;
}
"""
cpp_src = "torch::Tensor scale(torch::Tensor x, double s);"

_ext = None


def get_ext():
    global _ext
    if _ext is None:
        _ext = cpp_extension.load_inline(name="scale", cpp_sources=cpp_src, cuda_sources=cuda_src,
                                         functions=["scale"], extra_cuda_cflags=["-O3"])
    return _ext


class ModelNew(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s
        self.ext = get_ext()

    def forward(self, x):
        x = x.contiguous().view(-1)
        out = self.ext.scale(x, self.s)
        return out.view(x.shape)
'''

TRITON_HONEST = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 1024})], key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


def fused_add_relu(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    add_kernel[grid](x, y, out, n)
    return out


class ModelNew(nn.Module):
    def forward(self, x, y):
        return fused_add_relu(x.contiguous(), y.contiguous())
'''


def check(src, backend="cuda", overrides=None):
    return sp.check(textwrap.dedent(src), backend, overrides)


def rules(result, severity=None):
    return [f["rule"] for f in result["findings"] if severity is None or f["severity"] == severity]


def finding(result, rule):
    return next(f for f in result["findings"] if f["rule"] == rule)


def cuda_candidate(body="", forward="return self.ext.f(x)"):
    """An otherwise honest CUDA candidate with a snippet added at module level and a forward."""
    old_forward = ("        x = x.contiguous().view(-1)\n        out = self.ext.scale(x, self.s)\n"
                   "        return out.view(x.shape)\n")
    new_forward = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8) + "\n"
    assert old_forward in CUDA_HONEST
    return CUDA_HONEST.replace(old_forward, new_forward) + "\n" + textwrap.dedent(body)


@pytest.mark.parametrize("src,backend", [(CPU_HONEST, "cpu"), (CUDA_HONEST, "cuda"), (CUDA_HONEST, "hip"),
                                         (CUDA_HONEST, "musa"), (TRITON_HONEST, "triton")])
def test_honest_candidates_have_no_findings(src, backend):
    result = check(src, backend)
    assert result["version"] == "kb-static-v1"
    assert result["reject"] is None
    assert result["findings"] == []


def test_forward_with_extension_and_empty_like_only():
    src = cuda_candidate(forward="""
        out = torch.empty_like(x)
        self.ext.scale_into(out, x.contiguous(), self.s)
        return out.reshape(x.size(0), -1)
    """)
    assert check(src)["findings"] == []


def test_cupy_raw_kernel_counts_as_cuda():
    src = '''
    import cupy as cp
    import torch
    kern = cp.RawKernel(r"extern \\"C\\" void k(float* x) {}", "k")
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            kern((1,), (256,), (out.data_ptr(),))
            return out
    '''
    assert check(src)["findings"] == []


# ---------------------------------------------------------------------------------------------
# parse and structure


def test_syntax_error():
    r = check("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x)\n        return x\n")
    assert rules(r) == ["syntax_error"]
    assert r["reject"]["verdict"] == "COMPILE_ERROR" and r["reject"]["line"] == 3
    assert "line 3" in r["reject"]["message"]


def test_no_model_new():
    r = check(CUDA_HONEST.replace("class ModelNew", "class MyModel"))
    assert rules(r) == ["no_model_new"]
    assert r["reject"]["verdict"] == "COMPILE_ERROR"


@pytest.mark.parametrize("backend,src", [
    ("cpu", CUDA_HONEST.replace("cpp_sources=cpp_src, ", "")),   # only CUDA sources
    ("cuda", CPU_HONEST),                                          # C++ only
    ("triton", CUDA_HONEST),
    ("triton", TRITON_HONEST.replace("@triton.jit\n", "")),
])
def test_no_kernel_for_backend(backend, src):
    r = check(src, backend)
    assert r["reject"]["rule"] == "no_kernel_for_backend"
    assert r["reject"]["verdict"] == "FALLBACK"


def test_triton_jit_imported_bare_and_load_via_module_path():
    src = '''
    import torch
    from triton import jit
    @jit
    def k(x_ptr):
        pass
    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return x
    '''
    assert "no_kernel_for_backend" not in rules(check(src, "triton"))
    src = '''
    import torch
    ext = torch.utils.cpp_extension.load(name="e", sources=["e.cpp"])
    class ModelNew(torch.nn.Module):
        pass
    '''
    assert "no_kernel_for_backend" not in rules(check(src, "cpu"))


def test_pure_torch_fallback():
    src = '''
    import torch
    import torch.nn.functional as F
    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
        def forward(self, x):
            return F.relu(self.lin(x)).sum(dim=1) @ torch.matmul(x, x.t())
    '''
    r = check(src)
    assert r["reject"]["rule"] == "no_kernel_for_backend"
    msg = finding(r, "torch_compute_in_forward")["message"]
    for op in ("F.relu", "torch.matmul", ".sum()", "self.lin (torch.nn.Linear)", "operator @"):
        assert op in msg


@pytest.mark.parametrize("snippet", [
    "from reference import Model\nclass ModelNew(Model):\n    pass\n",
    "class Model(torch.nn.Module):\n    pass\nclass Base(Model):\n    pass\nclass ModelNew(Base):\n    pass\n",
    "class Model(torch.nn.Module):\n    pass\nModelNew = Model\n",
])
def test_inherits_reference(snippet):
    src = "import torch\n" + 'k = "__global__ void k() {}"\n' + snippet
    r = check(src)
    assert r["reject"]["rule"] == "inherits_reference"
    assert r["reject"]["verdict"] == "FALLBACK"


# ---------------------------------------------------------------------------------------------
# cheats


@pytest.mark.parametrize("body", [
    "exec(open('payload.py').read())",
    "import builtins as b\nrun = getattr(b, 'ex' + 'ec')\nrun('import os')",
    "import base64\neval(base64.b64decode('cHJpbnQoMSk=').decode())",
    "mod = __import__('importlib').import_module('os')",
    "import marshal, types\nf = types.FunctionType(marshal.loads(b''), {})",
    "g = __builtins__['eval']",
    "import torch.nn.functional as F\ndef pick(name):\n    return getattr(F, name)",
    "import pickle\nstate = pickle.loads(b'')",
    "vars(torch)['allclose'] = lambda *a, **k: True",
    "torch.__dict__['allclose'] = lambda *a, **k: True",
])
def test_dynamic_exec(body):
    r = check(cuda_candidate(body))
    assert r["reject"]["rule"] == "dynamic_exec", r
    assert (r["reject"]["verdict"], r["reject"]["cheat_class"]) == ("CHEAT", "tamper")


def test_exec_of_decoded_payload_is_named():
    r = check(cuda_candidate("import codecs\nexec(codecs.decode('cevag(1)', 'rot13'))"))
    assert "decoded payload" in finding(r, "dynamic_exec")["message"]


def test_torch_compile_is_a_flag_not_exec():
    r = check(cuda_candidate("fast = torch.compile(torch.nn.functional.gelu)"))
    assert rules(r) == ["torch_compile"]
    assert r["reject"] is None


@pytest.mark.parametrize("body", [
    "import ctypes\nptr = ctypes.cast(0x7f00, ctypes.POINTER(ctypes.c_float))",
    "m = __import__('c' + 'types')",
    "import os\nfd = os.open(f'/proc/{os.getpid()}/mem', os.O_RDWR)",
    "import mmap",
])
def test_ctypes_memory(body):
    r = check(cuda_candidate(body))
    assert "ctypes_memory" in rules(r, "reject"), r  # __import__ also rejects as dynamic_exec
    assert finding(r, "ctypes_memory")["cheat_class"] == "tamper"


@pytest.mark.parametrize("body", [
    "import sys\ndef peek():\n    return sys._getframe(2).f_locals['expected']",
    "import inspect",
    "import gc\nobjs = [o for o in gc.get_objects() if type(o).__name__ == 'Timer']",
    "import sys\nh = sys.modules['torch']",
    "def f():\n    try:\n        raise RuntimeError\n    except RuntimeError as e:\n"
    "        return e.__traceback__.tb_frame.f_back",
])
def test_frame_introspection(body):
    r = check(cuda_candidate(body))
    assert r["reject"]["rule"] == "frame_introspection", r


@pytest.mark.parametrize("body", [
    "import kjudge_harness.timing as t",
    "import kjudge_protocol.timing as t",
    "from kjudge_worker import job",
    "from kjudge import client",
    "import os\nseed = os.environ.get('KJUDGE_SEED')",
])
def test_harness_access(body):
    r = check(cuda_candidate(body))
    assert r["reject"]["rule"] == "harness_access", r


@pytest.mark.parametrize("body,what", [
    ("torch.allclose = lambda *a, **k: True", "torch.allclose"),
    ("import time\ntime.perf_counter = lambda: 0.0", "time.perf_counter"),
    ("torch.cuda.synchronize = lambda *a: None", "torch.cuda.synchronize"),
    ("import torch as t\nfrom torch import allclose\nsetattr(t, 'allclose', lambda *a, **k: True)", "torch.allclose"),
    ("torch.Tensor.__eq__ = lambda a, b: True", "torch.Tensor.__eq__"),
    ("Ev = torch.cuda.Event\nEv.elapsed_time = lambda s, e: 0.001", "torch.cuda.Event.elapsed_time"),
    ("from torch import Tensor\ndel Tensor.sum", "torch.Tensor.sum"),
    ("t = __import__('time')\nt.time = lambda: 0", "time.time"),
    ("object.__setattr__(torch.cuda, 'synchronize', print)", "torch.cuda.synchronize"),
])
def test_timer_patch(body, what):
    r = check(cuda_candidate(body))
    assert "timer_patch" in rules(r, "reject"), r  # __import__ also rejects as dynamic_exec
    assert finding(r, "timer_patch")["cheat_class"] == "timer_patch"
    assert what in finding(r, "timer_patch")["message"]


def test_own_objects_are_not_timer_patch():
    src = cuda_candidate("""
        allclose = None
        class Cache:
            pass
        Cache.hits = 0
        Cache.hits += 1
    """, forward="""
        self.calls = getattr(self, "calls", 0) + 1
        return self.ext.scale(x, self.s)
    """)
    r = check(src)
    assert r["findings"] == []


def test_variable_named_like_a_builtin_is_own_object():
    src = cuda_candidate("input = type('Cfg', (), {})()\ninput.scale = 2.0\nid = object()")
    assert check(src)["findings"] == []


def test_docstring_and_comment_do_not_count_as_kernel():
    src = ('"""uses a __global__ kernel"""\n# load_inline(cuda_sources=...)\n'
           "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert check(src)["reject"]["rule"] == "no_kernel_for_backend"


def test_torch_backends_are_global_config_flag():
    r = check(cuda_candidate("torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.benchmark = True"))
    assert rules(r) == ["torch_global_config"]
    assert r["reject"] is None


@pytest.mark.parametrize("body", [
    "import threading\nthreading.Thread(target=print, daemon=True).start()",
    "th = __import__('threading')",
    "from concurrent.futures import ThreadPoolExecutor",
    "import os\npid = os.fork()",
    "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0.001)",
    "import subprocess",
])
def test_threading(body):
    r = check(cuda_candidate(body))
    assert "threading" in rules(r, "reject"), r  # __import__ also rejects as dynamic_exec
    assert finding(r, "threading")["cheat_class"] == "deferred"
    assert "threads/processes are not allowed in a candidate" in finding(r, "threading")["message"]


@pytest.mark.parametrize("body", [
    "class Lazy(torch.Tensor):\n    pass",
    "from torch import Tensor as T\nclass Base(T):\n    pass\nclass Lazy(Base):\n    pass",
    "class Mode:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "from torch.utils._python_dispatch import TorchDispatchMode",
])
def test_tensor_subclass(body):
    r = check(cuda_candidate(body))
    assert r["reject"]["rule"] == "tensor_subclass", r
    assert r["reject"]["cheat_class"] == "lazy_output"


# ---------------------------------------------------------------------------------------------
# flags


def test_stream_api_is_flag():
    r = check(cuda_candidate(forward="""
        with torch.cuda.stream(torch.cuda.Stream()):
            return self.ext.scale(x, self.s)
    """))
    assert rules(r) == ["stream_api"] and r["reject"] is None
    r = check(CUDA_HONEST.replace("at::cuda::getCurrentCUDAStream()", "at::cuda::getStreamFromPool()"))
    assert rules(r) == ["stream_api"] and finding(r, "stream_api")["cheat_class"] == "stream"


def test_precision_cast_is_flag():
    r = check(cuda_candidate(forward="return self.ext.scale(x.half(), self.s).float()"))
    assert "precision_cast" in rules(r, "flag") and r["reject"] is None
    assert ".float()" in finding(r, "torch_compute_in_forward")["message"]
    r = check(CUDA_HONEST.replace("const float* x", "const __half* x"))
    assert rules(r) == ["precision_cast"]


def test_to_dtype_is_compute_but_device_move_is_plumbing():
    r = check(cuda_candidate(forward="return self.ext.scale(x.to('cuda'), self.s).to(torch.float64)"))
    assert rules(r) == ["torch_compute_in_forward"]
    assert ".to(dtype)" in finding(r, "torch_compute_in_forward")["message"]


def test_helper_methods_are_followed():
    r = check(cuda_candidate(forward="return self._post(self.ext.scale(x, self.s))", body="""
        def _unused():
            return torch.softmax(torch.ones(3), 0)
    """).replace("    def forward(", "    def _post(self, y):\n        return torch.softmax(y, dim=-1)\n\n"
                                      "    def forward("))
    msg = finding(r, "torch_compute_in_forward")["message"]
    assert msg == "ModelNew.forward computes with torch: torch.softmax"
    assert finding(r, "torch_compute_in_forward")["severity"] == "flag"


def test_get_inputs_redefined_and_imports_time_are_flags():
    r = check(cuda_candidate("import time\ndef get_inputs():\n    return []"))
    assert rules(r) == ["get_inputs_redefined", "imports_time"]
    assert r["reject"] is None


# ---------------------------------------------------------------------------------------------
# overrides and the rule table


def test_overrides_change_severity():
    src = cuda_candidate("import threading")
    r = check(src, overrides={"threading": "flag"})
    assert r["reject"] is None and rules(r, "flag") == ["threading"]
    r = check(src, overrides={"threading": "off"})
    assert r["reject"] is None and finding(r, "threading")["severity"] == "off"
    r = check(cuda_candidate("torch.backends.cuda.matmul.allow_tf32 = True"),
              overrides={"torch_global_config": "reject"})
    assert r["reject"]["rule"] == "torch_global_config"


def test_bad_overrides_and_backend_raise():
    with pytest.raises(ValueError):
        check(CUDA_HONEST, overrides={"no_such_rule": "off"})
    with pytest.raises(ValueError):
        check(CUDA_HONEST, overrides={"threading": "warn"})
    with pytest.raises(ValueError):
        check(CUDA_HONEST, backend="opencl")


def test_first_reject_is_the_cheat_not_the_fallback():
    r = check("import ctypes\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert rules(r, "reject") == ["ctypes_memory", "no_kernel_for_backend"]
    assert r["reject"]["rule"] == "ctypes_memory"


def test_rule_table_matches_detectors():
    with open(sp.RULES_PATH) as f:
        data = json.load(f)
    ids = [r["id"] for r in data["rules"]]
    assert set(ids) == set(sp.DETECTORS) | {"syntax_error"}
    for r in data["rules"]:
        assert r["severity"] in sp.SEVERITIES
        assert r["verdict"] in ("COMPILE_ERROR", "FALLBACK", "CHEAT")
        assert r["cheat_class"] in ("", "tamper", "timer_patch", "lazy_output", "interference", "deferred", "stream")
