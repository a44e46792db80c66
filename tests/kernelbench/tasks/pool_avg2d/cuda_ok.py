"""Honest CUDA candidate for pool_avg2d: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor avgpool2d_fwd(torch::Tensor x, int64_t k, int64_t stride, int64_t pad);
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
#define KB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KB_MAX(a, b) ((a) > (b) ? (a) : (b))

__global__ void avgpool2d_fwd_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t NC, int64_t H, int64_t W,
                            int64_t OH, int64_t OW, int64_t k, int64_t stride, int64_t pad) {
  const int64_t total = NC * OH * OW;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ow = idx % OW;
    const int64_t oh = (idx / OW) % OH;
    const int64_t nc = idx / (OW * OH);
    const float* xp = x + nc * H * W;
    {
        const int64_t hs = oh * stride - pad, ws = ow * stride - pad;
        const int64_t pool_size = (KB_MIN(hs + k, H + pad) - hs) * (KB_MIN(ws + k, W + pad) - ws);
        float s = 0.f;
        for (int64_t ih = KB_MAX(hs, (int64_t)0); ih < KB_MIN(hs + k, H); ++ih)
          for (int64_t iw = KB_MAX(ws, (int64_t)0); iw < KB_MIN(ws + k, W); ++iw) s += xp[ih * W + iw];
        y[idx] = s / (float)pool_size;
    }
  }
}

torch::Tensor avgpool2d_fwd(torch::Tensor x, int64_t k, int64_t stride, int64_t pad) {
  KB_CHECK_CUDA_F32(x);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  TORCH_CHECK(x.dim() == 4, "pool2d: expected (N, C, H, W)");
  TORCH_CHECK(k >= 1 && stride >= 1 && pad >= 0 && 2 * pad <= k, "pool2d: bad window");
  x = x.contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;
  TORCH_CHECK(OH > 0 && OW > 0, "pool2d: output would be empty");
  auto y = torch::empty({N, C, OH, OW}, x.options());
  const int64_t total = y.numel();
  if (total == 0) return y;
  avgpool2d_fwd_kernel<<<kb_blocks(total, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), N * C, H, W, OH, OW, k, stride, pad);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_pool_avg2d_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['avgpool2d_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k, self.stride, self.pad = 3, 2, 1

    def forward(self, x):
        return _ext.avgpool2d_fwd(x, self.k, self.stride, self.pad)
