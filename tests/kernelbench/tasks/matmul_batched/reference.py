import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
M = 64
K = 128
N = 64


class Model(nn.Module):
    """Batched matrix multiplication (bmm)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
