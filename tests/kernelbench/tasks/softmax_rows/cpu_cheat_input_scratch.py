"""Cheat: correct softmax values, but the input is overwritten with exp(x - max) as scratch."""
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

// Uses the input as scratch for exp(x - max) to save a buffer, then normalises into the output.
torch::Tensor softmax_scratch_fwd(torch::Tensor x) {
  KB_CHECK_F32(x);
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous(), "expected a contiguous 2-D tensor");
  auto out = torch::empty_like(x);
  const int64_t R = x.size(0), D = x.size(1);
  float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t r = 0; r < R; ++r) {
    float* row = px + r * D;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < D; ++j) mx = std::max(mx, row[j]);
    double s = 0.0;
    for (int64_t j = 0; j < D; ++j) { row[j] = std::exp(row[j] - mx); s += row[j]; }
    for (int64_t j = 0; j < D; ++j) po[r * D + j] = (float)(row[j] / s);
  }
  return out;
}
"""

_ext = load_inline(
    name="kb_softmax_rows_scratch",
    cpp_sources=_CPP_SRC,
    functions=['softmax_scratch_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_scratch_fwd(x)
