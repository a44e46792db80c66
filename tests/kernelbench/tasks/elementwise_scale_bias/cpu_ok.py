"""Honest CPU candidate for elementwise_scale_bias: plain C++ loops through load_inline."""
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

torch::Tensor scale_bias_fwd(torch::Tensor x, double scale, double bias) {
  KB_CHECK_F32(x);
  x = x.contiguous();
  auto out = torch::empty_like(x);
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const float s = (float)scale, b = (float)bias;
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = px[i] * s + b;
  return out;
}
"""

_ext = load_inline(
    name="kb_elementwise_scale_bias_ok",
    cpp_sources=_CPP_SRC,
    functions=['scale_bias_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale, bias):
        super().__init__()
        self.scale = scale
        self.bias = bias

    def forward(self, x):
        return _ext.scale_bias_fwd(x, self.scale, self.bias)
