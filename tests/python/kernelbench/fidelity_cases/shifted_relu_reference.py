import torch
import torch.nn as nn

BATCH, IN, OUT = 8, 32, 16


class Model(nn.Module):
    """relu(linear(x) - 3) on torch.rand inputs: the linear layer's output (std ~0.4) never reaches 3
    on get_inputs()'s draws, so every draw gives zeros; inputs x8 (strict's 'large') do reach it."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(IN, OUT)

    def forward(self, x):
        return torch.relu(self.linear(x) - 3.0)


def get_inputs():
    return [torch.rand(BATCH, IN)]


def get_init_inputs():
    return []
