import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
DIM = 1024


class Model(nn.Module):
    """Mean squared error, reduced to a 0-dim tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
