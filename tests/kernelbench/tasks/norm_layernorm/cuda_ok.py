"""Honest CUDA candidate for norm_layernorm: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);
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

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y,
                                 int64_t rows, int64_t D, float eps) {
  __shared__ float sh[33];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* p = x + r * D;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += p[j];
    const float mean = kb_block_sum(s, sh) / (float)D;
    float q = 0.f;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) { const float d = p[j] - mean; q += d * d; }
    const float var = kb_block_sum(q, sh) / (float)D;
    const float inv = rsqrtf(var + eps);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) y[r * D + j] = (p[j] - mean) * inv * w[j] + b[j];
  }
}

torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  KB_CHECK_CUDA_F32(x);
  KB_CHECK_CUDA_F32(w);
  KB_CHECK_CUDA_F32(b);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t D = w.numel();
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == D && b.numel() == D, "layernorm: shape mismatch");
  auto y = torch::empty_like(x);
  const int64_t rows = D == 0 ? 0 : x.numel() / D;
  if (rows == 0) return y;
  layernorm_kernel<<<(unsigned)std::min<int64_t>(rows, 1 << 20), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), rows, D, (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_norm_layernorm_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['layernorm_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return _ext.layernorm_fwd(x, self.ln.weight, self.ln.bias, self.ln.eps)
