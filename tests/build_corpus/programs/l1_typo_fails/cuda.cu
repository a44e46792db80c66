#include <torch/extension.h>

__global__ void sub_kernel(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] - b[i]
}

torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    sub_kernel<<<(a.numel() + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), a.numel());
    return out;
}
