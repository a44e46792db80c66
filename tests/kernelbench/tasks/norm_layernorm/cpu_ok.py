"""Honest CPU candidate for norm_layernorm: plain C++ loops through load_inline."""
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

torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  KB_CHECK_F32(x);
  KB_CHECK_F32(w);
  KB_CHECK_F32(b);
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t D = w.numel();
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == D && b.numel() == D, "layernorm: shape mismatch");
  auto out = torch::empty_like(x);
  const int64_t rows = D == 0 ? 0 : x.numel() / D;
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = px + r * D;
    double mean = 0.0;
    for (int64_t j = 0; j < D; ++j) mean += row[j];
    mean /= (double)D;
    double var = 0.0;
    for (int64_t j = 0; j < D; ++j) { const double d = row[j] - mean; var += d * d; }
    var /= (double)D;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < D; ++j) po[r * D + j] = (float)((row[j] - mean) * inv * pw[j] + pb[j]);
  }
  return out;
}
"""

_ext = load_inline(
    name="kb_norm_layernorm_ok",
    cpp_sources=_CPP_SRC,
    functions=['layernorm_fwd'],
    extra_cflags=["-O2"],
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
