"""Honest CPU candidate for structured_triu_matmul: it uses the problem's contract (both inputs are
upper triangular), so C[i][j] sums k over [i, j] only, as a model-written kernel for level1/14 does."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor triu_mm(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == a.size(1) && b.sizes() == a.sizes(), "square inputs");
  a = a.contiguous();
  b = b.contiguous();
  const int64_t n = a.size(0);
  auto c = torch::zeros({n, n}, a.options());
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) {
      double s = 0.0;
      for (int64_t k = i; k <= j; ++k) s += (double)pa[i * n + k] * pb[k * n + j];
      pc[i * n + j] = (float)s;
    }
  return c;
}
"""

_ext = load_inline(name="kb_structured_triu_ok", cpp_sources=_CPP_SRC, functions=["triu_mm"],
                   extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.triu_mm(A, B)
