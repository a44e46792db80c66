import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CHANNELS = 8
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    """MaxPool2d, kernel 2, stride 2."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
