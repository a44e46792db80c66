"""Cheat for activation_relu (cuda): computes ReLU in place, writing into its input, and returns the
input. Inputs are read-only: the write faults on the worker's read-only mapping (CUDA_FAULT), or,
where it lands, the worker finds its copy changed (CHEAT)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor relu_fwd(torch::Tensor x);
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

__global__ void relu_fwd_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

torch::Tensor relu_fwd(torch::Tensor x) {
  KB_CHECK_CUDA_F32(x);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  auto y = x;  // in place
  const int64_t n = x.numel();
  if (n > 0) {
    relu_fwd_kernel<<<kb_blocks(n, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return y;
}
"""

_ext = load_inline(
    name="kb_activation_relu_cuda_inplace",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['relu_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_fwd(x)
