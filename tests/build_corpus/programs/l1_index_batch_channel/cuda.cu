#include <torch/extension.h>

__global__ void plane_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    __shared__ float partial[256];
    float acc = 0.f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = partial[0];
}

torch::Tensor forward(torch::Tensor input) {
    TORCH_CHECK(input.dim() == 4, "expected NCHW input");
    const auto B = input.size(0), C = input.size(1);
    auto out = torch::zeros({B, C}, input.options());
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < C; ++c) {
            torch::Tensor plane = input.index({b, c}).contiguous();
            plane_sum_kernel<<<1, 256>>>(plane.data_ptr<float>(), out.data_ptr<float>() + b * C + c, plane.numel());
        }
    }
    return out;
}
