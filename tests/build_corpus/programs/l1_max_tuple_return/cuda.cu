#include <torch/extension.h>
#include <tuple>

__global__ void rowmax_kernel(const float* x, float* m, int64_t* idx, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float best = x[(int64_t)r * cols];
    int64_t arg = 0;
    for (int j = 1; j < cols; ++j)
        if (x[(int64_t)r * cols + j] > best) { best = x[(int64_t)r * cols + j]; arg = j; }
    m[r] = best;
    idx[r] = arg;
}

std::tuple<torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    auto m = torch::empty({rows}, x.options());
    auto idx = torch::empty({rows}, x.options().dtype(torch::kLong));
    rowmax_kernel<<<(rows + 127) / 128, 128>>>(x.data_ptr<float>(), m.data_ptr<float>(), idx.data_ptr<int64_t>(), rows, cols);
    return std::make_tuple(m, idx);
}
