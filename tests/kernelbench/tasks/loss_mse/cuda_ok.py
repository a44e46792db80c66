"""Honest CUDA candidate for loss_mse: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor mse_fwd(torch::Tensor p, torch::Tensor t);
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

__global__ void sqdiff_sum_kernel(const float* __restrict__ p, const float* __restrict__ t, int64_t n,
                                  double* __restrict__ acc) {
  __shared__ float sh[33];
  float s = 0.f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float d = p[i] - t[i];
    s += d * d;
  }
  s = kb_block_sum(s, sh);
  if (threadIdx.x == 0) atomicAdd(acc, (double)s);
}

__global__ void finalize_mean_kernel(const double* __restrict__ acc, float* __restrict__ out, int64_t n) {
  out[0] = (float)(acc[0] / (double)n);
}

torch::Tensor mse_fwd(torch::Tensor p, torch::Tensor t) {
  KB_CHECK_CUDA_F32(p);
  KB_CHECK_CUDA_F32(t);
  TORCH_CHECK(p.sizes() == t.sizes(), "mse: shape mismatch");
  const at::cuda::OptionalCUDAGuard guard(p.device());
  p = p.contiguous();
  t = t.contiguous();
  const int64_t n = p.numel();
  auto stream = at::cuda::getCurrentCUDAStream();
  auto acc = torch::empty({1}, p.options().dtype(torch::kFloat64));
  auto out = torch::empty({}, p.options());
  C10_CUDA_CHECK(cudaMemsetAsync(acc.data_ptr<double>(), 0, sizeof(double), stream));
  if (n > 0) {
    sqdiff_sum_kernel<<<std::min<unsigned>(kb_blocks(n, 256), 4096u), 256, 0, stream>>>(
        p.data_ptr<float>(), t.data_ptr<float>(), n, acc.data_ptr<double>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  finalize_mean_kernel<<<1, 1, 0, stream>>>(acc.data_ptr<double>(), out.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

_ext = load_inline(
    name="kb_loss_mse_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['mse_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.mse_fwd(predictions, targets)
