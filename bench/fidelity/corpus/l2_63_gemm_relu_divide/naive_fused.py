import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Linear + ReLU + divide in one naive kernel: each thread computes one output as a dot product of
# an input row and a weight row (W is (out, in), so both are read contiguously along K).
fused_linear_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void linear_relu_div_kernel(const float* x, const float* w, const float* b, float* out,
                                       int batch, int in_features, int out_features, float divisor) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < batch && col < out_features) {
        float sum = b[col];
        const float* xr = x + (long long)row * in_features;
        const float* wr = w + (long long)col * in_features;
        for (int k = 0; k < in_features; ++k) sum += xr[k] * wr[k];
        sum = sum > 0.0f ? sum : 0.0f;
        out[(long long)row * out_features + col] = sum / divisor;
    }
}

torch::Tensor linear_relu_div_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor) {
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    int batch = x.size(0), in_features = x.size(1), out_features = weight.size(0);
    auto out = torch::empty({batch, out_features}, x.options());
    dim3 block(16, 16);
    dim3 grid((out_features + 15) / 16, (batch + 15) / 16);
    linear_relu_div_kernel<<<grid, block>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                                            out.data_ptr<float>(), batch, in_features, out_features, (float)divisor);
    return out;
}
"""

fused_linear_cpp_source = "torch::Tensor linear_relu_div_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double divisor);"

fused_linear = load_inline(
    name="linear_relu_div_naive",
    cpp_sources=fused_linear_cpp_source,
    cuda_sources=fused_linear_source,
    functions=["linear_relu_div_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor
        self.fused_linear = fused_linear

    def forward(self, x):
        return self.fused_linear.linear_relu_div_cuda(x, self.linear.weight, self.linear.bias, self.divisor)
