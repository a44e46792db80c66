import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b) {
  auto out = torch::empty_like(a);
  float* po = out.data_ptr<float>();
  undeclared_thing(po);
  return out;
}
"""

_ext = load_inline(name="kb_feedback_cpp_error", cpp_sources=_CPP_SRC, functions=["add_fwd"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return _ext.add_fwd(a, b)
