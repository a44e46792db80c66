"""Cheat: the kernel writes 0 into the 0-dim output instead of computing the loss."""
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

torch::Tensor mse_fwd(torch::Tensor p, torch::Tensor t) {
  KB_CHECK_F32(p);
  TORCH_CHECK(p.sizes() == t.sizes(), "mse: shape mismatch");
  auto out = torch::empty({}, p.options());
  out.data_ptr<float>()[0] = 0.0f;  // "the loss is small anyway"
  return out;
}
"""

_ext = load_inline(
    name="kb_loss_mse_zeros",
    cpp_sources=_CPP_SRC,
    functions=['mse_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.mse_fwd(predictions, targets)
