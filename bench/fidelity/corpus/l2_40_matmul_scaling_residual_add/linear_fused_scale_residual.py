import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# x * s + x == x * (1 + s): after F.linear, one in-place kernel instead of clone, mul and add.
scale_residual_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void scale_residual_kernel(float* __restrict__ y, float factor, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = v * factor;
        y[idx] = v;
    }
}

torch::Tensor scale_residual_cuda(torch::Tensor y, double factor) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    scale_residual_kernel<<<blocks, threads>>>(y.data_ptr<float>(), (float)factor, n);
    return y;
}
"""

scale_residual_cpp_source = "torch::Tensor scale_residual_cuda(torch::Tensor y, double factor);"

scale_residual = load_inline(
    name="scale_residual_epilogue",
    cpp_sources=scale_residual_cpp_source,
    cuda_sources=scale_residual_source,
    functions=["scale_residual_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.scale_residual = scale_residual

    def forward(self, x):
        y = F.linear(x, self.matmul.weight, self.matmul.bias)
        return self.scale_residual.scale_residual_cuda(y, 1.0 + self.scaling_factor)
