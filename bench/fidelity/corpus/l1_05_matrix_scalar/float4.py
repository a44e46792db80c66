import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scale_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

// Vectorised A * s: each thread handles one float4, scalar tail handled separately.
__global__ void scale_vec4_kernel(const float4* __restrict__ in, float4* __restrict__ out, float s, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n4; i += stride) {
        float4 v = in[i];
        v.x *= s; v.y *= s; v.z *= s; v.w *= s;
        out[i] = v;
    }
}

__global__ void scale_scalar_kernel(const float* __restrict__ in, float* __restrict__ out, float s, long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) out[i] = in[i] * s;
}

torch::Tensor scale_cuda(torch::Tensor A, double s) {
    A = A.contiguous();
    auto out = torch::empty_like(A);
    const long long n = A.numel();
    const float* in = A.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int threads = 256;
    long long done = 0;
    if ((reinterpret_cast<uintptr_t>(in) % 16 == 0) && (reinterpret_cast<uintptr_t>(o) % 16 == 0)) {
        long long n4 = n / 4;
        if (n4 > 0) {
            long long blocks = std::min<long long>((n4 + threads - 1) / threads, 65535LL * 16);
            scale_vec4_kernel<<<blocks, threads>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(o), (float)s, n4);
        }
        done = n4 * 4;
    }
    if (done < n) {
        long long rest = n - done;
        long long blocks = std::min<long long>((rest + threads - 1) / threads, 65535LL * 16);
        scale_scalar_kernel<<<blocks, threads>>>(in, o, (float)s, done, n);
    }
    return out;
}
"""

scale_cpp_source = "torch::Tensor scale_cuda(torch::Tensor A, double s);"

scale_ext = load_inline(
    name="matrix_scalar_float4",
    cpp_sources=scale_cpp_source,
    cuda_sources=scale_source,
    functions=["scale_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.scale_ext = scale_ext

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return self.scale_ext.scale_cuda(A, float(s))
