"""A .cu that names only the tensor, its dtypes and options and the allocating factories is compiled
first with the minimal stand-in for torch/types.h (light_headers.minimal_types_h); a .cu that names
more, says requires_grad or includes another torch header is tried with the light one. A try that
does not compile is followed by the full headers. The compiles are real nvcc against the installed torch's headers (a cuda build
cannot link here: Debian's torch is CPU-only); the sequence of tries runs against a load_inline
that fails where told to, with the real retry (light_headers.rebuild). Whether a shortcut changes
which programs compile is tests/python/builds/test_build_corpus.py's question."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch.utils.cpp_extension as cpp_extension

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from kjudge_harness import light_headers  # noqa: E402

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

# model-style host code around one kernel, naming everything MINIMAL_NAMES allows
EVERY_MINIMAL_NAME = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
__global__ void axpy(const float* x, float* y, float a, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
torch::Tensor run(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: float32 on the GPU");
  torch::TensorOptions opts = torch::TensorOptions().dtype(torch::kFloat).device(x.device());
  at::ScalarType st = x.scalar_type();
  torch::IntArrayRef sizes = x.sizes();
  torch::Device dev = x.device();
  c10::DeviceType kind = dev.type();
  auto fmt = torch::MemoryFormat::Contiguous;
  torch::Scalar two = 2.0;
  (void)st; (void)kind; (void)fmt; (void)two; (void)torch::dtype(torch::kHalf); (void)torch::device(dev);
  (void)sizeof(at::Half); (void)sizeof(c10::BFloat16);
  auto y = torch::zeros_like(x) + torch::ones_like(x) * 0 + torch::full_like(x, 0.0);
  auto z = torch::empty(sizes, opts);
  auto w = torch::zeros(sizes, opts) + torch::ones(sizes, opts) + torch::full(sizes, 1.0, opts);
  auto out = torch::empty_like(x);
  out.copy_(y);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "axpy", [&] {
    axpy<<<(x.numel() + 255) / 256, 256>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), 2.0f, x.numel());
  });
  return out.view({-1}).contiguous() + z.sum() * 0 + w.mean() * 0;
}
"""
NEEDS_MORE = EVERY_MINIMAL_NAME.replace("return out", "return torch::matmul(out, out.t())") \
    .replace("out.view({-1}).contiguous() + z.sum() * 0 + w.mean() * 0", "out")


def test_a_cu_naming_only_the_tensor_its_dtypes_and_factories_is_tried_with_the_minimal_header():
    assert light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME})
    assert light_headers.minimal_fits({"cuda_sources": ["#include <torch/extension.h>", EVERY_MINIMAL_NAME]})
    assert not light_headers.minimal_fits({"cuda_sources": NEEDS_MORE})
    assert not light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME.replace(
        "torch::TensorOptions()", "torch::TensorOptions().requires_grad(false)")})
    for umbrella in ("#include <torch/torch.h>", '#include "torch/nn/functional.h"'):
        assert not light_headers.minimal_fits({"cuda_sources": [umbrella, EVERY_MINIMAL_NAME]}), umbrella
    assert not light_headers.minimal_fits({"cuda_sources": "at::Tensor f(at::Tensor x) { return at::relu(x); }"})
    assert not light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME + "\nPYBIND11_MODULE(m, mod) {}\n"})
    # at::cuda's and c10::cuda's headers are the candidate's own includes, read as they are;
    # torch::cuda is torch's API, which torch/types.h does not declare either
    assert light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME.replace(
        "256>>>", "256, 0, at::cuda::getCurrentCUDAStream()>>>")})
    assert not light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME.replace(
        "TORCH_CHECK(", "TORCH_CHECK(torch::cuda::is_available() && ")})


def load_inline_cu(tmp_path, source, shadow):
    """nvcc -c of `source` as load_inline writes its .cu (torch/types.h first), with `shadow` in
    front of torch's include dirs as NVCC_PREPEND_FLAGS puts it; (status, messages)."""
    cu = tmp_path / "cuda.cu"
    cu.write_text(light_headers.LOAD_INLINE_CU_HEAD + source)
    # torch's include dirs and Python's, as load_inline passes them
    includes = [f for d in cpp_extension.include_paths() + [sysconfig.get_paths()["include"]] for f in ("-isystem", d)]
    cmd = [NVCC, "-I" + shadow, "-c", str(cu), "-o", str(tmp_path / "cuda.o"), "-std=c++17",
           "--compiler-options", "-fPIC", "-gencode=arch=compute_90a,code=sm_90a"] + includes
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(not os.path.exists(NVCC), reason="no nvcc on this machine")
def test_the_minimal_header_declares_every_name_the_scan_lets_through(tmp_path):
    status, messages = load_inline_cu(tmp_path, EVERY_MINIMAL_NAME, light_headers.shadow_dir(str(tmp_path), True))
    assert status == 0, messages[-3000:]
    # and it is the minimal one that was read, not torch's torch/types.h
    status, messages = load_inline_cu(tmp_path, NEEDS_MORE, light_headers.shadow_dir(str(tmp_path), True))
    assert status != 0 and "matmul" in messages, messages[-3000:]


class FakeLoadInline:
    """load_inline that fails the file named for each try (None: builds), as torch's message says it."""

    def __init__(self, failures):
        self.failures, self.tries = list(failures), []

    def __call__(self, **kwargs):
        self.tries.append(os.environ.get("NVCC_PREPEND_FLAGS", ""))
        failed = self.failures.pop(0)
        if failed:
            raise RuntimeError(f"Error building extension '{kwargs['name']}': [1/3] c++ -c main.cpp\n"
                               f"[2/3] nvcc -c cuda.cu\nFAILED: {failed}\nerror: no member named 'x'\n")
        return "module"


@pytest.mark.parametrize("failures, mode, shadows", [
    ([None], "minimal", [".minimal-headers"]),
    (["cuda.cuda.o", None], "full", [".minimal-headers", ""]),
    (["main.o", None], "full", [".minimal-headers", ""]),
    # ninja >= 1.12 (pip's, on every GPU node) writes the exit code before the file (issue 53)
    (["[code=1] cuda.cuda.o", None], "full", [".minimal-headers", ""]),
    (["[code=2] main.o", None], "full", [".minimal-headers", ""]),
    # a link that fails after a shortcut is redone with the full headers too: whatever failed, the
    # full headers decide, as plain load_inline would
    (["kj_minimal_probe.so", None], "full", [".minimal-headers", ""]),
])
def test_a_minimal_try_that_does_not_compile_is_followed_by_the_full_one(tmp_path, monkeypatch, failures, mode,
                                                                          shadows):
    monkeypatch.delenv("NVCC_PREPEND_FLAGS", raising=False)
    pch = tmp_path / "pch"
    (pch / "light" / "torch" / "extension.h.gch").mkdir(parents=True)  # main.cpp's light header, made
    fake = FakeLoadInline(failures)
    bound = {"name": "kj_minimal_probe", "cpp_sources": ["torch::Tensor run(torch::Tensor x);"],
             "cuda_sources": [EVERY_MINIMAL_NAME], "functions": ["run"]}
    assert light_headers.build(fake, bound, str(tmp_path), str(pch)) == ("module", mode)
    assert [t.split("/")[-1] if t else "" for t in fake.tries] == shadows


def test_a_cu_the_scan_keeps_away_is_tried_light(tmp_path, monkeypatch):
    monkeypatch.delenv("NVCC_PREPEND_FLAGS", raising=False)
    fake = FakeLoadInline([None])
    bound = {"name": "kj_light_probe", "cpp_sources": ["torch::Tensor run(torch::Tensor x);"],
             "cuda_sources": [NEEDS_MORE], "functions": ["run"]}
    assert light_headers.build(fake, bound, str(tmp_path), None) == ("module", "light")
    assert [t.split("/")[-1] for t in fake.tries] == [".light-headers"]


def test_a_build_that_fails_with_the_full_headers_too_raises_the_full_headers_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NVCC_PREPEND_FLAGS", raising=False)
    fake = FakeLoadInline(["[code=1] cuda.cuda.o", "[code=1] cuda.cuda.o"])
    bound = {"name": "kj_minimal_probe", "cpp_sources": [""], "cuda_sources": [EVERY_MINIMAL_NAME], "functions": []}
    with pytest.raises(RuntimeError, match="FAILED: .code=1. cuda.cuda.o"):
        light_headers.build(fake, bound, str(tmp_path), None)
    assert [t.split("/")[-1] for t in fake.tries] == [".minimal-headers", ""]


def test_code_in_torchs_namespaces_gets_no_shortcut():
    """Unqualified reads of torch's names are where a light header's missing names could change
    what compiles: such a file is built with the full headers only."""
    for hazard in ("using namespace torch;", "using namespace at;", "using namespace ::c10;",
                   "namespace at { int matmul = 1; }", "namespace torch::detail { int x; }"):
        cu = EVERY_MINIMAL_NAME + "\n" + hazard + "\n"
        assert not light_headers._light_cu({"cuda_sources": cu}), hazard
    assert not light_headers._light_cu({"cuda_sources": EVERY_MINIMAL_NAME + "\nPYBIND11_MODULE(m, mod) {}\n"})
    assert light_headers._light_cu({"cuda_sources": EVERY_MINIMAL_NAME + "\nusing torch::Tensor;\nnamespace mine { int at; }\n"})


def test_a_function_named_like_an_aten_operator_taking_a_tensor_gets_no_minimal_try():
    """relu(x) with a tensor finds at::relu too under the full headers (ADL): ambiguous there."""
    own_relu = "torch::Tensor relu(const torch::Tensor& x) { return torch::empty_like(x); }\n"
    assert not light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME + own_relu})
    own_scale = "torch::Tensor scale_cuda(const torch::Tensor& x) { return torch::empty_like(x); }\n"
    assert light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME + own_scale})
    assert light_headers.minimal_fits({"cuda_sources": EVERY_MINIMAL_NAME + "__device__ float relu(float v) { return v; }\n"})


@pytest.mark.skipif(not os.path.exists(NVCC), reason="no nvcc on this machine")
def test_load_inline_compiles_the_cu_with_the_minimal_header(tmp_path, monkeypatch):
    """The real load_inline, its .cu given the minimal header through NVCC_PREPEND_FLAGS, compiles.
    Under Debian's torch the link fails (no CUDA libraries to link) and is redone with the full
    headers, which fail the same way: that error is raised, and the minimal try's object exists."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.6")  # no GPU to ask; one torch 1.13 knows
    monkeypatch.delenv("NVCC_PREPEND_FLAGS", raising=False)
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    bound = dict(name="kj_minimal_e2e", cpp_sources=["torch::Tensor run(torch::Tensor x);"],
                 cuda_sources=[EVERY_MINIMAL_NAME], functions=["run"], build_directory=str(build_dir), verbose=False,
                 extra_cuda_cflags=["-std=c++17"])  # CUDA 13's CCCL wants it; torch 1.13 passes c++14
    tries = []
    def load_inline(**kwargs):
        tries.append(os.environ.get("NVCC_PREPEND_FLAGS", ""))
        return cpp_extension.load_inline(**kwargs)
    try:
        assert light_headers.build(load_inline, bound, str(tmp_path), None)[1] == "minimal"
    except RuntimeError as exc:  # the link: both tries compiled their .cu
        assert "FAILED" in str(exc) and "kj_minimal_e2e.so" in str(exc), str(exc)[-2000:]
        assert len(tries) == 2 and ".minimal-headers" in tries[0] and tries[1] == ""
    assert (build_dir / "cuda.cuda.o").exists()
