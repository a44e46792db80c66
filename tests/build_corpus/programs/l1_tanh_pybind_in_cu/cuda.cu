#include <torch/extension.h>

__global__ void tanh_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = tanhf(x[i]);
}

torch::Tensor tanh_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    tanh_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("tanh_forward", &tanh_forward, "tanh (CUDA)");
}
