"""Honest CUDA candidate for reduction_sum_dim: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor sum_dim_fwd(torch::Tensor x, int64_t dim);
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

__device__ __forceinline__ float kb_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float kb_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// blockDim.x must be a multiple of 32 (<= 1024); sh must hold 33 floats.
__device__ float kb_block_sum(float v, float* sh) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = kb_warp_sum(v);
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  if (wid == 0) {
    float t = lane < nw ? sh[lane] : 0.f;
    t = kb_warp_sum(t);
    if (lane == 0) sh[32] = t;
  }
  __syncthreads();
  const float r = sh[32];
  __syncthreads();
  return r;
}
__device__ float kb_block_max(float v, float* sh) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = kb_warp_max(v);
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  if (wid == 0) {
    float t = lane < nw ? sh[lane] : -INFINITY;
    t = kb_warp_max(t);
    if (lane == 0) sh[32] = t;
  }
  __syncthreads();
  const float r = sh[32];
  __syncthreads();
  return r;
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

// one thread per output element; consecutive threads read consecutive addresses when inner > 1
__global__ void sum_cols_kernel(const float* __restrict__ x, float* __restrict__ y,
                                int64_t outer, int64_t r, int64_t inner) {
  const int64_t total = outer * inner;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = idx / inner, i = idx % inner;
    const float* p = x + o * r * inner + i;
    float acc = 0.f;
    for (int64_t k = 0; k < r; ++k) acc += p[k * inner];
    y[idx] = acc;
  }
}

// one block per row when the reduced dimension is the innermost one
__global__ void sum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t r) {
  __shared__ float sh[33];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* p = x + row * r;
    float acc = 0.f;
    for (int64_t k = threadIdx.x; k < r; k += blockDim.x) acc += p[k];
    acc = kb_block_sum(acc, sh);
    if (threadIdx.x == 0) y[row] = acc;
  }
}

torch::Tensor sum_dim_fwd(torch::Tensor x, int64_t dim) {
  KB_CHECK_CUDA_F32(x);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  int64_t outer, r, inner;
  kb_split(x, dim, outer, r, inner);
  std::vector<int64_t> osz(x.sizes().begin(), x.sizes().end());
  osz[dim] = 1;
  auto y = torch::empty(osz, x.options());
  const int64_t total = outer * inner;
  if (total == 0) return y;
  auto stream = at::cuda::getCurrentCUDAStream();
  if (inner == 1) {
    sum_rows_kernel<<<(unsigned)std::min<int64_t>(outer, 1 << 20), 256, 0, stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), outer, r);
  } else {
    sum_cols_kernel<<<kb_blocks(total, 256), 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), outer, r, inner);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_reduction_sum_dim_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['sum_dim_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _ext.sum_dim_fwd(x, self.dim)
