#include <torch/extension.h>
using torch::indexing::Slice;

__global__ void glu_kernel(const float* a, const float* g, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * (1.f / (1.f + __expf(-g[i])));
}

torch::Tensor forward(torch::Tensor x) {
    const int64_t half = x.size(-1) / 2;
    auto a = x.index({torch::indexing::Ellipsis, Slice(0, half)}).contiguous();
    auto g = x.index({"...", Slice(half, torch::indexing::None)}).contiguous();
    auto out = torch::empty(a.sizes(), x.options());
    const int64_t n = a.numel();
    glu_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), g.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
