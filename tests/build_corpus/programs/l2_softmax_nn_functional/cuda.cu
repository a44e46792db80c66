#include <torch/extension.h>

namespace F = torch::nn::functional;

__global__ void scale_kernel(float* x, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

torch::Tensor forward(torch::Tensor x) {
    auto y = x.clone();
    scale_kernel<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), 0.125f, y.numel());
    return F::softmax(y, F::SoftmaxFuncOptions(-1));
}
