"""Honest CUDA candidate for elementwise_mul_add: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor mul_add_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c);
"""

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>

#define KB_CHECK_CUDA_F32(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == torch::kFloat32, #t " must be a float32 CUDA tensor")

static inline unsigned kb_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (1 << 20)) b = 1 << 20;
  return (unsigned)b;
}

__global__ void mul_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                               const float* __restrict__ c, float* __restrict__ d, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    d[i] = fmaf(a[i], b[i], c[i]);
}

torch::Tensor mul_add_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
  KB_CHECK_CUDA_F32(a);
  KB_CHECK_CUDA_F32(b);
  KB_CHECK_CUDA_F32(c);
  TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == c.sizes(), "mul_add: shape mismatch");
  const at::cuda::OptionalCUDAGuard guard(a.device());
  a = a.contiguous();
  b = b.contiguous();
  c = c.contiguous();
  auto d = torch::empty_like(a);
  const int64_t n = a.numel();
  if (n > 0) {
    mul_add_kernel<<<kb_blocks(n, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), d.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return d;
}
"""

_ext = load_inline(
    name="kb_elementwise_mul_add_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['mul_add_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return _ext.mul_add_fwd(a, b, c)
