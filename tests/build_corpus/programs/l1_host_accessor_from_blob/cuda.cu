#include <torch/extension.h>
#include <vector>
#include <cmath>

__global__ void lut_kernel(const float* x, const float* lut, float* y, int64_t n, int entries) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        int k = min(max(int((x[i] + 4.f) / 8.f * (entries - 1)), 0), entries - 1);
        y[i] = lut[k];
    }
}

torch::Tensor forward(torch::Tensor x) {
    const int entries = 1024;
    std::vector<float> table(entries);
    for (int k = 0; k < entries; ++k) table[k] = std::tanh(-4.f + 8.f * k / (entries - 1));
    auto host = torch::from_blob(table.data(), {1, entries}, torch::kFloat32).clone();
    auto acc = host.accessor<float, 2>();
    for (int k = 0; k < entries; ++k) acc[0][k] = acc[0][k] * 0.5f + 0.5f;
    auto lut = host.to(x.device()).view({-1});
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    lut_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), lut.data_ptr<float>(), y.data_ptr<float>(), n, entries);
    return y;
}
