"""Honest CPU candidate for norm_batchnorm_eval: plain C++ loops through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#define KB_CHECK_F32(t) TORCH_CHECK((t).device().is_cpu() && (t).scalar_type() == torch::kFloat32, #t " must be a float32 CPU tensor")

torch::Tensor bn_eval_fwd(torch::Tensor x, torch::Tensor mean, torch::Tensor var,
                          torch::Tensor w, torch::Tensor b, double eps) {
  KB_CHECK_F32(x);
  KB_CHECK_F32(mean);
  KB_CHECK_F32(var);
  KB_CHECK_F32(w);
  KB_CHECK_F32(b);
  TORCH_CHECK(x.dim() >= 2, "batchnorm: need (N, C, ...)");
  x = x.contiguous();
  mean = mean.contiguous();
  var = var.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t N = x.size(0), C = x.size(1);
  TORCH_CHECK(mean.numel() == C && var.numel() == C && w.numel() == C && b.numel() == C, "batchnorm: channel mismatch");
  const int64_t inner = (N * C) == 0 ? 0 : x.numel() / (N * C);
  auto out = torch::empty_like(x);
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const float* pm = mean.data_ptr<float>();
  const float* pv = var.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double scale = pw[c] / std::sqrt((double)pv[c] + eps);
      const double shift = pb[c] - pm[c] * scale;
      const int64_t base = (n * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i) po[base + i] = (float)(px[base + i] * scale + shift);
    }
  return out;
}
"""

_ext = load_inline(
    name="kb_norm_batchnorm_eval_ok",
    cpp_sources=_CPP_SRC,
    functions=['bn_eval_fwd'],
    extra_cflags=["-O2"],
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
