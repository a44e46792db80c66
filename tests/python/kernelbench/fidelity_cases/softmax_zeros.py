"""A wrong softmax: its kernel never writes the output (zeros). At long rows the expected answer is
near zero, so its zeros match the declared set's answer: wrong, never a replay."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
torch::Tensor softmax_fwd(torch::Tensor x) { return torch::zeros_like(x); }
"""

_ext = load_inline(name="kb_softmax_zeros", cpp_sources=_CPP_SRC, functions=["softmax_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_fwd(x)
