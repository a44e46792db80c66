"""Honest KL divergence for probability rows: sum t * (log t - log p) / batch, in its own kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor kl_fwd(torch::Tensor p, torch::Tensor t) {
  p = p.contiguous();
  t = t.contiguous();
  const int64_t rows = p.size(0), n = p.numel();
  const float* pp = p.data_ptr<float>();
  const float* pt = t.data_ptr<float>();
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i)
    if (pt[i] > 0) s += (double)pt[i] * (std::log((double)pt[i]) - std::log((double)pp[i]));
  auto out = torch::empty({}, p.options());
  *out.data_ptr<float>() = (float)(s / (double)rows);
  return out;
}
"""

_ext = load_inline(name="kb_kl_div_probabilities", cpp_sources=_CPP_SRC, functions=["kl_fwd"],
                   extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.kl_fwd(predictions, targets)
