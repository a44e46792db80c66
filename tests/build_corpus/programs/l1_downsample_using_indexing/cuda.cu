#include <torch/extension.h>
using namespace torch::indexing;

__global__ void scale_kernel(const float* x, float* y, float s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}

torch::Tensor forward(torch::Tensor x) {
    auto strided = x.index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)}).contiguous();
    auto y = torch::empty_like(strided);
    const int64_t n = strided.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(strided.data_ptr<float>(), y.data_ptr<float>(), 0.25f, n);
    return y;
}
