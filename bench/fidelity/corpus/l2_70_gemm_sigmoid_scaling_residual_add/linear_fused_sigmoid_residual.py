import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# Gemm in cuBLAS; sigmoid(y) * s + y fused into one kernel.
sigmoid_residual_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void sigmoid_residual_kernel(float* __restrict__ y, float scale, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = v + scale / (1.0f + expf(-v));
        y[idx] = v;
    }
}

torch::Tensor sigmoid_residual_cuda(torch::Tensor y, double scale) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    sigmoid_residual_kernel<<<blocks, threads>>>(y.data_ptr<float>(), (float)scale, n);
    return y;
}
"""

sigmoid_residual_cpp_source = "torch::Tensor sigmoid_residual_cuda(torch::Tensor y, double scale);"

sigmoid_residual = load_inline(
    name="sigmoid_residual_epilogue",
    cpp_sources=sigmoid_residual_cpp_source,
    cuda_sources=sigmoid_residual_source,
    functions=["sigmoid_residual_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor
        self.sigmoid_residual = sigmoid_residual

    def forward(self, x):
        y = F.linear(x, self.gemm.weight, self.gemm.bias)
        return self.sigmoid_residual.sigmoid_residual_cuda(y, self.scaling_factor)
