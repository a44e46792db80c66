import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# LayerNorm over the trailing normalized_shape: one block per sample computes mean and variance
# (double accumulation, shared-memory reduction), then applies weight and bias.
layer_norm_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define BLOCK 1024

__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ y,
                                  long long inner, float eps) {
    const float* xr = x + (long long)blockIdx.x * inner;
    float* yr = y + (long long)blockIdx.x * inner;
    double s = 0.0, ss = 0.0;
    for (long long i = threadIdx.x; i < inner; i += BLOCK) {
        float v = xr[i];
        s += v;
        ss += (double)v * v;
    }
    __shared__ double sh_s[BLOCK];
    __shared__ double sh_ss[BLOCK];
    sh_s[threadIdx.x] = s;
    sh_ss[threadIdx.x] = ss;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            sh_s[threadIdx.x] += sh_s[threadIdx.x + stride];
            sh_ss[threadIdx.x] += sh_ss[threadIdx.x + stride];
        }
        __syncthreads();
    }
    double mean = sh_s[0] / inner;
    double var = sh_ss[0] / inner - mean * mean;
    float m = (float)mean;
    float rstd = (float)(1.0 / sqrt(var + (double)eps));
    for (long long i = threadIdx.x; i < inner; i += BLOCK) {
        yr[i] = (xr[i] - m) * rstd * gamma[i] + beta[i];
    }
}

torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    long long inner = weight.numel();
    long long outer = x.numel() / inner;
    auto y = torch::empty_like(x);
    layer_norm_kernel<<<outer, BLOCK>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                                        y.data_ptr<float>(), inner, (float)eps);
    return y;
}
"""

layer_norm_cpp_source = "torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

layer_norm_ext = load_inline(
    name="layer_norm_block_per_sample",
    cpp_sources=layer_norm_cpp_source,
    cuda_sources=layer_norm_source,
    functions=["layer_norm_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.layer_norm_ext = layer_norm_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm_ext.layer_norm_cuda(x, self.ln.weight, self.ln.bias, self.ln.eps)
