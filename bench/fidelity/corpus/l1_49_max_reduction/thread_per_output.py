import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Max values (torch.max(x, dim)[0]) over one dimension. The tensor is viewed as (outer, reduce, inner); one thread per
# (outer, inner) output walks the reduced dimension, so a warp reads consecutive addresses.
max_reduce_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cfloat>

__global__ void max_reduce_kernel(const float* __restrict__ x, float* __restrict__ out,
                              long long outer, long long reduce, long long inner) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    long long o = idx / inner;
    long long i = idx % inner;
    const float* p = x + o * reduce * inner + i;
    float best = -FLT_MAX;
    for (long long r = 0; r < reduce; ++r) best = fmaxf(best, p[r * inner]);
    out[idx] = best;
}

torch::Tensor max_reduce_cuda(torch::Tensor x, int64_t dim) {
    if (dim < 0) dim += x.dim();
    x = x.contiguous();
    long long outer = 1, inner = 1, reduce = x.size(dim);
    for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
    for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < x.dim(); ++d) {
        if (d != dim) out_shape.push_back(x.size(d));
    }
    auto out = torch::empty(out_shape, x.options().dtype(torch::kFloat32));
    long long total = outer * inner;
    const int threads = 256;
    max_reduce_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), outer, reduce, inner);
    return out;
}
"""

max_reduce_cpp_source = "torch::Tensor max_reduce_cuda(torch::Tensor x, int64_t dim);"

max_reduce_ext = load_inline(
    name="max_reduce_over_dim",
    cpp_sources=max_reduce_cpp_source,
    cuda_sources=max_reduce_source,
    functions=["max_reduce_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.max_reduce_ext = max_reduce_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.max_reduce_ext.max_reduce_cuda(x, self.dim)
