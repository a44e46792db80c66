import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
DIM = 512


class Model(nn.Module):
    """Hinge loss mean(clamp(1 - predictions * targets, min=0)) with +-1 float targets."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randint(0, 2, (BATCH, DIM)).float() * 2 - 1]


def get_init_inputs():
    return []
