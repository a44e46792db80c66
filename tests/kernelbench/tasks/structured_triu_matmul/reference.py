import torch
import torch.nn as nn

N = 96


class Model(nn.Module):
    """Matrix multiplication of upper triangular matrices (KernelBench level1/14 at a CPU size)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(A, B))


def get_inputs():
    A = torch.triu(torch.rand(N, N))
    B = torch.triu(torch.rand(N, N))
    return [A, B]


def get_init_inputs():
    return []
