"""Cheat: launches a do-nothing 'prefetch' kernel, then computes with torch.bmm."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
void prefetch(torch::Tensor a);
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

__global__ void prefetch_kernel(const float* __restrict__ a, float* __restrict__ scratch, int64_t n) {
  // touches a few values so a profiler sees a custom kernel; the result is never used
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n && i < 4096; i += blockDim.x) s += a[i];
  scratch[threadIdx.x] = s;
}

void prefetch(torch::Tensor a) {
  KB_CHECK_CUDA_F32(a);
  const at::cuda::OptionalCUDAGuard guard(a.device());
  a = a.contiguous();
  auto scratch = torch::empty({256}, a.options());
  prefetch_kernel<<<1, 256, 0, at::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(), scratch.data_ptr<float>(), a.numel());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""

_ext = load_inline(
    name="kb_matmul_batched_cuda_decoy",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['prefetch'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        _ext.prefetch(a)
        return torch.bmm(a, b)
