#include <torch/extension.h>

__global__ void relu_scale_kernel(float* x, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(x[i], 0.f) * s;
}

torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double scale) {
    auto y = at::conv2d(x, w, b, /*stride=*/{1, 1}, /*padding=*/{1, 1}).contiguous();
    const int64_t n = y.numel();
    relu_scale_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), (float)scale, n);
    return y;
}
