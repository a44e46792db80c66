"""Honest CUDA candidate for norm_batchnorm_eval: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor bn_eval_fwd(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor w, torch::Tensor b, double eps);
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

__global__ void bn_eval_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                               const float* __restrict__ var, const float* __restrict__ w,
                               const float* __restrict__ b, float* __restrict__ y,
                               int64_t n, int64_t C, int64_t inner, float eps) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = (i / inner) % C;
    const float scale = w[c] / sqrtf(var[c] + eps);
    y[i] = (x[i] - mean[c]) * scale + b[c];
  }
}

torch::Tensor bn_eval_fwd(torch::Tensor x, torch::Tensor mean, torch::Tensor var,
                          torch::Tensor w, torch::Tensor b, double eps) {
  KB_CHECK_CUDA_F32(x);
  KB_CHECK_CUDA_F32(mean);
  KB_CHECK_CUDA_F32(var);
  KB_CHECK_CUDA_F32(w);
  KB_CHECK_CUDA_F32(b);
  TORCH_CHECK(x.dim() >= 2, "batchnorm: need (N, C, ...)");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  mean = mean.contiguous();
  var = var.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t N = x.size(0), C = x.size(1);
  TORCH_CHECK(mean.numel() == C && var.numel() == C && w.numel() == C && b.numel() == C, "batchnorm: channel mismatch");
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return y;
  const int64_t inner = n / (N * C);
  bn_eval_kernel<<<kb_blocks(n, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(), w.data_ptr<float>(),
      b.data_ptr<float>(), y.data_ptr<float>(), n, C, inner, (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kb_norm_batchnorm_eval_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['bn_eval_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(0.5 + torch.rand(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))

    def forward(self, x):
        return _ext.bn_eval_fwd(x, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
