import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# The GEMM stays in cuBLAS (torch.matmul); bias add and ReLU are fused into one in-place kernel.
bias_relu_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, long long n_cols, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = fmaxf(v + bias[idx % n_cols], 0.0f);
        y[idx] = v;
    }
}

torch::Tensor bias_relu_cuda(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    bias_relu_kernel<<<blocks, threads>>>(y.data_ptr<float>(), bias.contiguous().data_ptr<float>(), bias.numel(), n);
    return y;
}
"""

bias_relu_cpp_source = "torch::Tensor bias_relu_cuda(torch::Tensor y, torch::Tensor bias);"

bias_relu = load_inline(
    name="bias_relu_epilogue",
    cpp_sources=bias_relu_cpp_source,
    cuda_sources=bias_relu_source,
    functions=["bias_relu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.bias_relu = bias_relu

    def forward(self, x):
        y = torch.matmul(x, self.gemm.weight.t()).contiguous()
        return self.bias_relu.bias_relu_cuda(y, self.bias)
