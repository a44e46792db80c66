#include <torch/extension.h>

template <typename scalar_t>
__global__ void abs_kernel(const scalar_t* x, scalar_t* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] < 0 ? -x[i] : x[i];
}

torch::Tensor forward(torch::Tensor x) {
    auto y = torch::zeros_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.type(), "abs_kernel", ([&] {
        abs_kernel<scalar_t><<<(x.numel() + 255) / 256, 256>>>(x.data<scalar_t>(), y.data<scalar_t>(), x.numel());
    }));
    return y;
}
