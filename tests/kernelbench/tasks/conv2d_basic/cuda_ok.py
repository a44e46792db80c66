"""Honest CUDA candidate for conv2d_basic: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor conv2d_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride, int64_t pad, bool relu);
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

__global__ void conv2d_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                              float* __restrict__ y, int N, int C, int H, int W, int OC, int KH, int KW,
                              int OH, int OW, int stride, int pad, int relu) {
  const int64_t total = (int64_t)N * OC * OH * OW;
  for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
    const int ow = (int)(idx % OW);
    int64_t t = idx / OW;
    const int oh = (int)(t % OH);
    t /= OH;
    const int oc = (int)(t % OC);
    const int n = (int)(t / OC);
    float acc = b[oc];
    const float* wp = w + (int64_t)oc * C * KH * KW;
    for (int c = 0; c < C; ++c) {
      const float* xp = x + ((int64_t)n * C + c) * H * W;
      const float* wc = wp + (int64_t)c * KH * KW;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * stride - pad + kh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * stride - pad + kw;
          if (iw < 0 || iw >= W) continue;
          acc += xp[(int64_t)ih * W + iw] * wc[kh * KW + kw];
        }
      }
    }
    if (relu && acc < 0.f) acc = 0.f;
    y[idx] = acc;
  }
}

torch::Tensor conv2d_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride, int64_t pad, bool relu) {
  KB_CHECK_CUDA_F32(x);
  KB_CHECK_CUDA_F32(w);
  KB_CHECK_CUDA_F32(b);
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1) && b.numel() == w.size(0), "conv2d: shape mismatch");
  TORCH_CHECK(stride >= 1 && pad >= 0, "conv2d: bad stride/padding");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OC = w.size(0), KH = w.size(2), KW = w.size(3);
  const int64_t OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  TORCH_CHECK(OH > 0 && OW > 0, "conv2d: output would be empty");
  auto y = torch::empty({N, OC, OH, OW}, x.options());
  const int64_t total = y.numel();
  if (total == 0) return y;
  conv2d_kernel<<<kb_blocks(total, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
      (int)N, (int)C, (int)H, (int)W, (int)OC, (int)KH, (int)KW, (int)OH, (int)OW, (int)stride, (int)pad, relu ? 1 : 0);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_conv2d_basic_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['conv2d_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return _ext.conv2d_fwd(x, self.conv.weight, self.conv.bias, 1, self.conv.padding[0], False)
