import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Memory-bound op: 128-bit loads/stores and a grid-stride loop sized to the SM count.
relu_vec_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.0f);
        v.y = fmaxf(v.y, 0.0f);
        v.z = fmaxf(v.z, 0.0f);
        v.w = fmaxf(v.w, 0.0f);
        y[i] = v;
    }
}

__global__ void relu_tail_kernel(const float* __restrict__ x, float* __restrict__ y, long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_vec_cuda(torch::Tensor x) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const long long n = x.numel();
    if (n == 0) return y;
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    long long n4 = 0;
    if (reinterpret_cast<uintptr_t>(xp) % 16 == 0 && reinterpret_cast<uintptr_t>(yp) % 16 == 0) {
        n4 = n / 4;
        if (n4 > 0) {
            long long blocks = std::min<long long>((n4 + 255) / 256, (long long)sms * 8);
            relu_vec4_kernel<<<blocks, 256>>>(reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n4);
        }
    }
    long long start = n4 * 4;
    if (start < n) {
        long long rest = n - start;
        relu_tail_kernel<<<(rest + 255) / 256, 256>>>(xp, yp, start, n);
    }
    return y;
}
"""

relu_vec_cpp_source = "torch::Tensor relu_vec_cuda(torch::Tensor x);"

relu_vec = load_inline(
    name="relu_float4_gridstride",
    cpp_sources=relu_vec_cpp_source,
    cuda_sources=relu_vec_source,
    functions=["relu_vec_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.relu_vec = relu_vec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_vec.relu_vec_cuda(x)
