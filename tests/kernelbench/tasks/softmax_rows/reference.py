import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 4096


class Model(nn.Module):
    """Softmax over dim=1 of a (BATCH, DIM) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
