"""Honest CPU candidate for structured_symmetric_matmul: B is symmetric by the problem's contract,
so the kernel reads B[j][k] for B[k][j] (row-contiguous access), as model-written answers do."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor sym_mm(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0) && b.size(0) == b.size(1), "shapes");
  a = a.contiguous();
  b = b.contiguous();
  const int64_t m = a.size(0), n = b.size(0);
  auto c = torch::empty({m, n}, a.options());
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < n; ++k) s += (double)pa[i * n + k] * pb[j * n + k];
      pc[i * n + j] = (float)s;
    }
  return c;
}
"""

_ext = load_inline(name="kb_structured_symmetric_ok", cpp_sources=_CPP_SRC, functions=["sym_mm"],
                   extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.sym_mm(A, B)
