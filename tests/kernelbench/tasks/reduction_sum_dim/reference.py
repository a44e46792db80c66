import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM1 = 256
DIM2 = 256


class Model(nn.Module):
    """Sum over one dimension with keepdim=True."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2)]


def get_init_inputs():
    return [1]
