import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# torch.addmm for the Linear, then divide + exact GELU in one kernel.
div_gelu_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void div_gelu_kernel(float* __restrict__ y, float inv_divisor, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = v * inv_divisor;
        v = 0.5f * v * (1.0f + erff(v * 0.7071067811865475f));
        y[idx] = v;
    }
}

torch::Tensor div_gelu_cuda(torch::Tensor y, double inv_divisor) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    div_gelu_kernel<<<blocks, threads>>>(y.data_ptr<float>(), (float)inv_divisor, n);
    return y;
}
"""

div_gelu_cpp_source = "torch::Tensor div_gelu_cuda(torch::Tensor y, double inv_divisor);"

div_gelu = load_inline(
    name="div_gelu_epilogue",
    cpp_sources=div_gelu_cpp_source,
    cuda_sources=div_gelu_source,
    functions=["div_gelu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, output_size, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor
        self.div_gelu = div_gelu

    def forward(self, x):
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return self.div_gelu.div_gelu_cuda(y, 1.0 / self.divisor)
