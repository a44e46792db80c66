import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CHANNELS = 8
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    """AvgPool2d, kernel 3, stride 2, padding 1, count_include_pad=True."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
