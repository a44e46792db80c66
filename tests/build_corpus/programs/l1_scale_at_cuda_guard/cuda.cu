#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

__global__ void scale_kernel(const float* x, float* y, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}

torch::Tensor forward(torch::Tensor x) {
    at::cuda::OptionalCUDAGuard guard(x.device());
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), 2.f, n);
    return y;
}
