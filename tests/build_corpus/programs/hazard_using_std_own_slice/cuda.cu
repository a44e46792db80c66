#include <torch/extension.h>
#include <vector>
using namespace std;

struct slice {
    int64_t start, length;
};

__global__ void copy_kernel(const float* x, float* y, int64_t start, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[start + i];
}

torch::Tensor forward(torch::Tensor x) {
    slice s{x.numel() / 4, x.numel() / 2};
    auto y = torch::empty({s.length}, x.options());
    copy_kernel<<<(s.length + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), s.start, s.length);
    return y;
}
