import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
#include <limits>

torch::Tensor nan_like(torch::Tensor a) {
  return torch::full_like(a, std::numeric_limits<float>::quiet_NaN());
}

torch::Tensor sub(torch::Tensor a, torch::Tensor b) {
  auto out = torch::empty_like(a);
  out.copy_(a);
  out.sub_(b);
  return out;
}
"""

_ext = load_inline(name="kb_feedback_cases", cpp_sources=_CPP_SRC, functions=["nan_like", "sub"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return _ext.sub(a, b)
