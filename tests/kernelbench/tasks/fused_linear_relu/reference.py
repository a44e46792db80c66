import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_FEATURES = 256
OUT_FEATURES = 128


class Model(nn.Module):
    """Linear layer followed by ReLU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
