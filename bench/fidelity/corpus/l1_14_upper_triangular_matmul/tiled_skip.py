import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Tiled upper-triangular matmul. Blocks strictly below the diagonal only write zeros; for the
# others only the k-tiles between the row tile and the column tile are visited (A[i][k] = 0 for
# k < i, B[k][j] = 0 for k > j), and the lower part of the result is zeroed (torch.triu).
triu_tiled_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define TS 32

__global__ void triu_tiled_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, int N) {
    const int bx = blockIdx.x, by = blockIdx.y;
    const int row = by * TS + threadIdx.y;
    const int col = bx * TS + threadIdx.x;
    if (by > bx) {
        if (row < N && col < N) C[(long long)row * N + col] = 0.0f;
        return;
    }
    __shared__ float sA[TS][TS];
    __shared__ float sB[TS][TS];
    float acc = 0.0f;
    for (int t = by; t <= bx; ++t) {
        int ak = t * TS + threadIdx.x;
        int bk = t * TS + threadIdx.y;
        sA[threadIdx.y][threadIdx.x] = (row < N && ak < N) ? A[(long long)row * N + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < N && col < N) ? B[(long long)bk * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll 8
        for (int k = 0; k < TS; ++k) acc += sA[threadIdx.y][k] * sB[k][threadIdx.x];
        __syncthreads();
    }
    if (row < N && col < N) C[(long long)row * N + col] = (col >= row) ? acc : 0.0f;
}

torch::Tensor triu_tiled_cuda(torch::Tensor A, torch::Tensor B) {
    A = A.contiguous();
    B = B.contiguous();
    const int N = A.size(0);
    auto C = torch::empty({N, N}, A.options());
    dim3 threads(TS, TS);
    dim3 grid((N + TS - 1) / TS, (N + TS - 1) / TS);
    triu_tiled_kernel<<<grid, threads>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), N);
    return C;
}
"""

triu_tiled_cpp_source = "torch::Tensor triu_tiled_cuda(torch::Tensor A, torch::Tensor B);"

triu_tiled = load_inline(
    name="triu_matmul_tiled_skip",
    cpp_sources=triu_tiled_cpp_source,
    cuda_sources=triu_tiled_source,
    functions=["triu_tiled_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.triu_tiled = triu_tiled

    def forward(self, A, B):
        return self.triu_tiled.triu_tiled_cuda(A, B)
