import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# Convolution left to cuDNN (self.conv); ReLU and the per-channel bias add fused into one kernel.
relu_bias_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_bias_kernel(float* __restrict__ y, const float* __restrict__ bias, long long channels, long long hw, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        long long c = (idx / hw) % channels;
        v = fmaxf(v, 0.0f) + bias[c];
        y[idx] = v;
    }
}

torch::Tensor relu_bias_cuda(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    relu_bias_kernel<<<blocks, threads>>>(y.data_ptr<float>(), bias.contiguous().data_ptr<float>(), (long long)y.size(1), (long long)(y.size(2) * y.size(3)), n);
    return y;
}
"""

relu_bias_cpp_source = "torch::Tensor relu_bias_cuda(torch::Tensor y, torch::Tensor bias);"

relu_bias = load_inline(
    name="relu_bias_epilogue",
    cpp_sources=relu_bias_cpp_source,
    cuda_sources=relu_bias_source,
    functions=["relu_bias_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.relu_bias = relu_bias

    def forward(self, x):
        y = self.conv(x).contiguous()
        return self.relu_bias.relu_bias_cuda(y, self.bias)
