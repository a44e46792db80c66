import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Inclusive prefix sum along dim.
# One thread per row walks it sequentially (simple and exact in order, but slow: neighbouring
# threads read addresses one row apart). Other dims are moved last first.
scan_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void row_scan_kernel(const float* __restrict__ x, float* __restrict__ out, long long rows, long long len) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    long long base = row * len;
    float running = 0.0f;
    for (long long j = 0; j < len; ++j) {
        running += x[base + j];
        out[base + j] = running;
    }
}

torch::Tensor cumsum_cuda(torch::Tensor x, int64_t dim) {
    if (dim < 0) dim += x.dim();
    bool moved = dim != x.dim() - 1;
    auto xin = moved ? x.transpose(dim, -1).contiguous() : x.contiguous();

    auto out = torch::empty_like(xin);
    long long len = xin.size(-1);
    long long rows = len == 0 ? 0 : xin.numel() / len;
    if (rows == 0) return moved ? out.transpose(dim, -1).contiguous() : out;
    const int threads = 128;
    row_scan_kernel<<<(rows + threads - 1) / threads, threads>>>(xin.data_ptr<float>(), out.data_ptr<float>(), rows, len);
    return moved ? out.transpose(dim, -1).contiguous() : out;
}
"""

scan_cpp_source = "torch::Tensor cumsum_cuda(torch::Tensor x, int64_t dim);"

scan_ext = load_inline(
    name="cumsum_thread_per_row",
    cpp_sources=scan_cpp_source,
    cuda_sources=scan_source,
    functions=["cumsum_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.scan_ext = scan_ext

    def forward(self, x):
        return self.scan_ext.cumsum_cuda(x, self.dim)
