#include <torch/extension.h>
using torch::indexing::Slice;

__global__ void clamp_kernel(float* x, float lo, float hi, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] = fminf(fmaxf(x[i], lo), hi);
}

torch::Tensor forward(torch::Tensor x) {
    auto out = x.clone();
    const int64_t n = out.numel();
    clamp_kernel<<<(n + 255) / 256, 256>>>(out.data_ptr<float>(), -1.f, 1.f, n);
    out.index_put_({Slice(), 0}, 0.0);
    auto mask = out.abs() < 1e-3;
    out.index_put_({mask}, torch::zeros({1}, out.options()));
    return out;
}
