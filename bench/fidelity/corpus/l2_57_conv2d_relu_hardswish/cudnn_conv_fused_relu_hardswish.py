import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# cuDNN convolution followed by a single fused ReLU + HardSwish kernel (x * clamp((x + 3) / 6, 0, 1)).
relu_hardswish_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_hardswish_kernel(float* __restrict__ y, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = fmaxf(v, 0.0f);
        v = v * fminf(fmaxf((v + 3.0f) / 6.0f, 0.0f), 1.0f);
        y[idx] = v;
    }
}

torch::Tensor relu_hardswish_cuda(torch::Tensor y) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    relu_hardswish_kernel<<<blocks, threads>>>(y.data_ptr<float>(), n);
    return y;
}
"""

relu_hardswish_cpp_source = "torch::Tensor relu_hardswish_cuda(torch::Tensor y);"

relu_hardswish = load_inline(
    name="relu_hardswish_epilogue",
    cpp_sources=relu_hardswish_cpp_source,
    cuda_sources=relu_hardswish_source,
    functions=["relu_hardswish_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.relu_hardswish = relu_hardswish

    def forward(self, x):
        y = self.conv(x)
        return self.relu_hardswish.relu_hardswish_cuda(y)
