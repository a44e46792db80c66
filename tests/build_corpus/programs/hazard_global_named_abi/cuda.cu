#include <torch/extension.h>

// layout version of the packed weights this kernel reads
constexpr int abi = 2;

__global__ void unpack_kernel(const float* x, float* y, int version, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = version >= 2 ? x[i] : -x[i];
}

torch::Tensor forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    unpack_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), abi, x.numel());
    return y;
}
