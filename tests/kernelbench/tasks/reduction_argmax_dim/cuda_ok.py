"""Honest CUDA candidate for reduction_argmax_dim: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor argmax_dim_fwd(torch::Tensor x, int64_t dim);
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

static void kb_split(const torch::Tensor& x, int64_t& dim, int64_t& outer, int64_t& r, int64_t& inner) {
  const int64_t nd = x.dim();
  TORCH_CHECK(nd >= 1, "need at least one dimension");
  if (dim < 0) dim += nd;
  TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range");
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
  r = x.size(dim);
}

__global__ void argmax_cols_kernel(const float* __restrict__ x, int64_t* __restrict__ y,
                                   int64_t outer, int64_t r, int64_t inner) {
  const int64_t total = outer * inner;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = idx / inner, i = idx % inner;
    const float* p = x + o * r * inner + i;
    float m = p[0];
    int64_t arg = 0;
    for (int64_t k = 1; k < r; ++k) {
      const float v = p[k * inner];
      if (v > m) { m = v; arg = k; }
    }
    y[idx] = arg;
  }
}

torch::Tensor argmax_dim_fwd(torch::Tensor x, int64_t dim) {
  KB_CHECK_CUDA_F32(x);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  int64_t outer, r, inner;
  kb_split(x, dim, outer, r, inner);
  TORCH_CHECK(r > 0, "argmax over an empty dimension");
  std::vector<int64_t> osz(x.sizes().begin(), x.sizes().end());
  osz.erase(osz.begin() + dim);
  auto y = torch::empty(osz, x.options().dtype(torch::kInt64));
  const int64_t total = outer * inner;
  if (total == 0) return y;
  argmax_cols_kernel<<<kb_blocks(total, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<int64_t>(), outer, r, inner);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_reduction_argmax_dim_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['argmax_dim_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _ext.argmax_dim_fwd(x, self.dim)
