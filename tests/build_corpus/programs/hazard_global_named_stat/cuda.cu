#include <torch/extension.h>

__device__ float stat[2];  // running mean and variance scratch

__global__ void moments_kernel(const float* x, int64_t n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float m = 0.f, q = 0.f;
        for (int64_t i = 0; i < n; ++i) { m += x[i]; q += x[i] * x[i]; }
        stat[0] = m / n;
        stat[1] = q / n - stat[0] * stat[0];
    }
}

torch::Tensor forward(torch::Tensor x) {
    moments_kernel<<<1, 1>>>(x.data_ptr<float>(), x.numel());
    return x;
}
