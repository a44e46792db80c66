import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Sum (keepdim=True) over one dimension. The tensor is viewed as (outer, reduce, inner); one thread per
# (outer, inner) output walks the reduced dimension, so a warp reads consecutive addresses.
sum_reduce_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cfloat>

__global__ void sum_reduce_kernel(const float* __restrict__ x, float* __restrict__ out,
                              long long outer, long long reduce, long long inner) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    long long o = idx / inner;
    long long i = idx % inner;
    const float* p = x + o * reduce * inner + i;
    float acc = 0.0f;
    for (long long r = 0; r < reduce; ++r) acc += p[r * inner];
    out[idx] = acc;
}

torch::Tensor sum_reduce_cuda(torch::Tensor x, int64_t dim) {
    if (dim < 0) dim += x.dim();
    x = x.contiguous();
    long long outer = 1, inner = 1, reduce = x.size(dim);
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < x.dim(); ++d) {
        if (d != dim) out_shape.push_back(x.size(d));
        else out_shape.push_back(1);
    }
    auto out = torch::empty(out_shape, x.options().dtype(torch::kFloat32));
    long long total = outer * inner;
    const int threads = 256;
    sum_reduce_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer, reduce, inner);
    return out;
}
"""

sum_reduce_cpp_source = "torch::Tensor sum_reduce_cuda(torch::Tensor x, int64_t dim);"

sum_reduce_ext = load_inline(
    name="sum_reduce_over_dim",
    cpp_sources=sum_reduce_cpp_source,
    cuda_sources=sum_reduce_source,
    functions=["sum_reduce_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.sum_reduce_ext = sum_reduce_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sum_reduce_ext.sum_reduce_cuda(x, self.dim)
