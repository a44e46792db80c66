import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# RMSNorm over dim 1 of (B, C, *spatial): one thread per (b, spatial position) loops over the C
# channels (stride = spatial size, so neighbouring threads read neighbouring addresses).
rms_norm_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void rms_norm_kernel(const float* __restrict__ x, float* __restrict__ y,
                                long long batch, long long channels, long long spatial, float eps) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * spatial) return;
    long long b = idx / spatial;
    long long s = idx % spatial;
    const float* xp = x + b * channels * spatial + s;
    float* yp = y + b * channels * spatial + s;
    float sum_sq = 0.0f;
    for (long long c = 0; c < channels; ++c) {
        float v = xp[c * spatial];
        sum_sq += v * v;
    }
    float inv_rms = 1.0f / sqrtf(sum_sq / (float)channels + eps);
    for (long long c = 0; c < channels; ++c) yp[c * spatial] = xp[c * spatial] * inv_rms;
}

torch::Tensor rms_norm_cuda(torch::Tensor x, double eps) {
    x = x.contiguous();
    auto y = torch::empty_like(x);
    long long batch = x.size(0), channels = x.size(1);
    long long spatial = x.numel() / (batch * channels);
    long long total = batch * spatial;
    const int threads = 256;
    rms_norm_kernel<<<(total + threads - 1) / threads, threads>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), batch, channels, spatial, (float)eps);
    return y;
}
"""

rms_norm_cpp_source = "torch::Tensor rms_norm_cuda(torch::Tensor x, double eps);"

rms_norm = load_inline(
    name="rms_norm_thread_per_position",
    cpp_sources=rms_norm_cpp_source,
    cuda_sources=rms_norm_source,
    functions=["rms_norm_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.rms_norm = rms_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rms_norm.rms_norm_cuda(x, self.eps)
