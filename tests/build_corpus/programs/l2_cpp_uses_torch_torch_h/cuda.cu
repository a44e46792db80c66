#include <torch/extension.h>

__global__ void hardswish_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f; }
}

torch::Tensor hardswish_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    hardswish_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
