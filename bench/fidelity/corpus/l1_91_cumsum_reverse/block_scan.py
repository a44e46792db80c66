import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Reverse cumulative sum (flip, cumsum, flip) as one scan that walks each row from its end.
# One block per row. The row is processed in chunks of THREADS * ITEMS elements: every thread
# scans ITEMS consecutive elements in registers, the per-thread totals are scanned with warp
# shuffles (then across warps through shared memory), and a running carry links the chunks.
block_scan_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define THREADS 512
#define ITEMS 4

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
    #pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float n = __shfl_up_sync(0xffffffff, v, o);
        if (lane >= o) v += n;
    }
    return v;
}

__global__ void block_scan_kernel(const float* __restrict__ x, float* __restrict__ out, long long len) {
    __shared__ float warp_totals[THREADS / 32];
    const long long base = (long long)blockIdx.x * len;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float carry = 0.0f;
    for (long long start = 0; start < len; start += (long long)THREADS * ITEMS) {
        float v[ITEMS];
        float total = 0.0f;
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            long long pos = start + (long long)threadIdx.x * ITEMS + k;
            float e = 0.0f;
            if (pos < len) { e = x[base + (len - 1 - pos)]; }
            v[k] = e;
            total += e;
        }
        float incl = warp_inclusive_scan(total, lane);
        if (lane == 31) warp_totals[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            float w = lane < THREADS / 32 ? warp_totals[lane] : 0.0f;
            w = warp_inclusive_scan(w, lane);
            if (lane < THREADS / 32) warp_totals[lane] = w;
        }
        __syncthreads();
        float offset = carry + (incl - total) + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
        float running = offset;
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            long long pos = start + (long long)threadIdx.x * ITEMS + k;
            if (pos < len) {
                float e = v[k];
                running += e; out[base + (len - 1 - pos)] = running;
            }
        }
        carry += warp_totals[THREADS / 32 - 1];
        __syncthreads();
    }
}

torch::Tensor reverse_cumsum_cuda(torch::Tensor x, int64_t dim) {
    if (dim < 0) dim += x.dim();
    bool moved = dim != x.dim() - 1;
    auto xin = moved ? x.transpose(dim, -1).contiguous() : x.contiguous();
    auto out = torch::empty_like(xin);
    long long len = xin.size(-1);
    long long rows = len == 0 ? 0 : xin.numel() / len;
    if (rows > 0)
        block_scan_kernel<<<rows, THREADS>>>(xin.data_ptr<float>(), out.data_ptr<float>(), len);
    return moved ? out.transpose(dim, -1).contiguous() : out;
}
"""

block_scan_cpp_source = "torch::Tensor reverse_cumsum_cuda(torch::Tensor x, int64_t dim);"

block_scan = load_inline(
    name="reverse_cumsum_block_scan",
    cpp_sources=block_scan_cpp_source,
    cuda_sources=block_scan_source,
    functions=["reverse_cumsum_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.block_scan = block_scan

    def forward(self, x):
        return self.block_scan.reverse_cumsum_cuda(x, self.dim)
