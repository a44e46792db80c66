import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# nn.Linear through F.linear (cuBLAS); Swish and the scaling are one fused elementwise kernel.
swish_scale_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void swish_scale_kernel(float* __restrict__ y, float scale, long long n) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; idx < n; idx += stride) {
        float v = y[idx];
        v = v / (1.0f + __expf(-v)) * scale;
        y[idx] = v;
    }
}

torch::Tensor swish_scale_cuda(torch::Tensor y, double scale) {
    TORCH_CHECK(y.is_contiguous(), "expected a contiguous tensor");
    long long n = y.numel();
    const int threads = 256;
    long long blocks = std::min<long long>((n + threads - 1) / threads, 65535LL * 8);
    swish_scale_kernel<<<blocks, threads>>>(y.data_ptr<float>(), (float)scale, n);
    return y;
}
"""

swish_scale_cpp_source = "torch::Tensor swish_scale_cuda(torch::Tensor y, double scale);"

swish_scale = load_inline(
    name="swish_scale_epilogue",
    cpp_sources=swish_scale_cpp_source,
    cuda_sources=swish_scale_source,
    functions=["swish_scale_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.swish_scale = swish_scale

    def forward(self, x):
        y = F.linear(x, self.matmul.weight, self.matmul.bias)
        return self.swish_scale.swish_scale_cuda(y, self.scaling_factor)
