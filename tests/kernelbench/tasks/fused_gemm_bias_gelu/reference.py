import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_FEATURES = 256
OUT_FEATURES = 256


class Model(nn.Module):
    """GEMM without bias, then a separate bias add, then exact GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))

    def forward(self, x):
        return F.gelu(self.gemm(x) + self.bias)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
