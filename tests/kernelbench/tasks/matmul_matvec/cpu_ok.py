"""Honest CPU candidate for matmul_matvec: plain C++ loops through load_inline."""
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

torch::Tensor matvec_fwd(torch::Tensor a, torch::Tensor b) {
  KB_CHECK_F32(a);
  KB_CHECK_F32(b);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && b.size(1) == 1 && a.size(1) == b.size(0), "matvec: shape mismatch");
  a = a.contiguous();
  b = b.contiguous();
  const int64_t M = a.size(0), K = a.size(1);
  auto c = torch::empty({M, 1}, a.options());
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i) {
    double s = 0.0;
    for (int64_t k = 0; k < K; ++k) s += (double)pa[i * K + k] * pb[k];
    pc[i] = (float)s;
  }
  return c;
}
"""

_ext = load_inline(
    name="kb_matmul_matvec_ok",
    cpp_sources=_CPP_SRC,
    functions=['matvec_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.matvec_fwd(a, b)
