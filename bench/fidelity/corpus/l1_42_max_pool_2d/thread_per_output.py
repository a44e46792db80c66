import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# MaxPool2d (no ceil mode): one thread per output element, padding treated as -inf.
maxpool_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cfloat>

__global__ void maxpool2d_kernel(const float* __restrict__ x, float* __restrict__ y,
                                 int H, int W, int OH, int OW, int k, int stride, int pad, int dil,
                                 long long total) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int ow = idx % OW;
    int oh = (idx / OW) % OH;
    long long nc = idx / ((long long)OW * OH);
    const float* plane = x + nc * H * W;
    float best = -FLT_MAX;
    int h0 = oh * stride - pad, w0 = ow * stride - pad;
    for (int i = 0; i < k; ++i) {
        int h = h0 + i * dil;
        if (h < 0 || h >= H) continue;
        for (int j = 0; j < k; ++j) {
            int w = w0 + j * dil;
            if (w < 0 || w >= W) continue;
            best = fmaxf(best, plane[h * W + w]);
        }
    }
    y[idx] = best;
}

torch::Tensor maxpool2d_cuda(torch::Tensor x, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    x = x.contiguous();
    const int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int OH = (H + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    const int OW = (W + 2 * pad - dil * (k - 1) - 1) / stride + 1;
    auto y = torch::empty({N, C, OH, OW}, x.options());
    long long total = (long long)N * C * OH * OW;
    const int threads = 256;
    maxpool2d_kernel<<<(total + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(),
        H, W, OH, OW, (int)k, (int)stride, (int)pad, (int)dil, total);
    return y;
}
"""

maxpool_cpp_source = "torch::Tensor maxpool2d_cuda(torch::Tensor x, int64_t k, int64_t stride, int64_t pad, int64_t dil);"

maxpool = load_inline(
    name="maxpool2d_thread_per_output",
    cpp_sources=maxpool_cpp_source,
    cuda_sources=maxpool_source,
    functions=["maxpool2d_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super(ModelNew, self).__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.maxpool = maxpool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool.maxpool2d_cuda(x, self.kernel_size, self.stride, self.padding, self.dilation)
