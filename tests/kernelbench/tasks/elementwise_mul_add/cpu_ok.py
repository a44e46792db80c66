"""Honest CPU candidate for elementwise_mul_add: plain C++ loops through load_inline."""
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

torch::Tensor mul_add_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
  KB_CHECK_F32(a);
  KB_CHECK_F32(b);
  KB_CHECK_F32(c);
  TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == c.sizes(), "mul_add: shape mismatch");
  a = a.contiguous();
  b = b.contiguous();
  c = c.contiguous();
  auto out = torch::empty_like(a);
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  const float* pc = c.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = (float)((double)pa[i] * (double)pb[i] + (double)pc[i]);
  return out;
}
"""

_ext = load_inline(
    name="kb_elementwise_mul_add_ok",
    cpp_sources=_CPP_SRC,
    functions=['mul_add_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return _ext.mul_add_fwd(a, b, c)
