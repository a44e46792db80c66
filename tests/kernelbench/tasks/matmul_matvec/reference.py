import torch
import torch.nn as nn
import torch.nn.functional as F

M = 256
K = 1024


class Model(nn.Module):
    """Matrix-vector product: (M, K) @ (K, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
