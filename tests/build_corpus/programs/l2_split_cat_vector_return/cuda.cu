#include <torch/extension.h>
#include <vector>

__global__ void swish_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] / (1.f + __expf(-x[i]));
}

std::vector<torch::Tensor> swish_and_concat(torch::Tensor a, torch::Tensor b) {
    auto sa = torch::empty_like(a);
    const int64_t n = a.numel();
    swish_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), sa.data_ptr<float>(), n);
    return {sa, torch::cat({sa, b}, 1)};
}

torch::Tensor concat_only(torch::Tensor a, torch::Tensor b) {
    return torch::cat({a, b}, /*dim=*/1);
}
