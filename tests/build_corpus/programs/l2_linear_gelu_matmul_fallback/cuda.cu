#include <torch/extension.h>

__global__ void bias_gelu_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        float v = y[i] + bias[i % cols];
        y[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    auto y = torch::matmul(x, w.t()).contiguous();
    const int64_t rows = y.size(0), cols = y.size(1);
    bias_gelu_kernel<<<(rows * cols + 255) / 256, 256>>>(y.data_ptr<float>(), bias.data_ptr<float>(), rows, cols);
    return y;
}
