import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 1024


class Model(nn.Module):
    """Sigmoid."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
