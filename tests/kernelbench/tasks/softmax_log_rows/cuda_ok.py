"""Honest CUDA candidate for softmax_log_rows: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor log_softmax_fwd(torch::Tensor x);
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

__global__ void log_softmax_fwd_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t R, int64_t D) {
  __shared__ float sh[33];
  for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
    const float* p = x + r * D;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) m = fmaxf(m, p[j]);
    m = kb_block_max(m, sh);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += expf(p[j] - m);
    s = kb_block_sum(s, sh);
    const float inv = 1.f / s;
    const float logs = logf(s);
    (void)inv;
    (void)logs;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) y[r * D + j] = p[j] - m - logs;
  }
}

torch::Tensor log_softmax_fwd(torch::Tensor x) {
  KB_CHECK_CUDA_F32(x);
  TORCH_CHECK(x.dim() == 2, "expected a 2-D tensor (rows, cols)");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const int64_t R = x.size(0), D = x.size(1);
  if (R == 0 || D == 0) return y;
  log_softmax_fwd_kernel<<<(unsigned)std::min<int64_t>(R, 1 << 20), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), R, D);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_softmax_log_rows_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['log_softmax_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.log_softmax_fwd(x)
