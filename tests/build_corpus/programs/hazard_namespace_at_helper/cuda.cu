#include <torch/extension.h>

namespace at {
namespace kj {
inline Tensor scaled(const Tensor& x, double s) { return x * s; }
}  // namespace kj
}  // namespace at

__global__ void bias_kernel(float* x, float b, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] += b;
}

torch::Tensor forward(torch::Tensor x) {
    auto y = at::kj::scaled(x, 2.0).contiguous();
    bias_kernel<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), 1.f, y.numel());
    return y;
}
