import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CHANNELS = 16
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    """BatchNorm2d in inference mode (running statistics) with non-trivial statistics."""

    def __init__(self, channels, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(0.5 + torch.rand(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, 1e-5]
