#include <torch/extension.h>

__global__ void argmax_kernel(const float* x, int64_t* idx, float* best, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int64_t arg = 0;
    float m = x[(int64_t)r * cols];
    for (int j = 1; j < cols; ++j) {
        float v = x[(int64_t)r * cols + j];
        if (v > m) { m = v; arg = j; }
    }
    idx[r] = arg;
    best[r] = m;
}

torch::Tensor forward(torch::Tensor x) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, x.get_device()).layout(torch::kStrided);
    auto idx_opts = x.options().dtype(torch::kInt64);
    const int rows = x.size(0), cols = x.size(1);
    auto best = torch::empty({rows}, opts);
    auto idx = torch::full({rows}, -1, idx_opts);
    argmax_kernel<<<(rows + 127) / 128, 128>>>(x.data_ptr<float>(), idx.data_ptr<int64_t>(), best.data_ptr<float>(), rows, cols);
    return idx;
}
