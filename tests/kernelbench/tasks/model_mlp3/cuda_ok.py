"""Honest CUDA candidate for model_mlp3: a __global__ kernel through load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor linear_act_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t act);
"""

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>

#define KB_CHECK_CUDA_F32(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == torch::kFloat32, #t " must be a float32 CUDA tensor")

static inline unsigned kb_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (1 << 20)) b = 1 << 20;
  return (unsigned)b;
}

#define KB_TILE 16
__global__ void kb_gemm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                               const float* __restrict__ bias, float* __restrict__ C,
                               int M, int N, int K, long long sA, long long sB, long long sC,
                               int trans_b, int act) {
  __shared__ float As[KB_TILE][KB_TILE + 1];
  __shared__ float Bs[KB_TILE][KB_TILE + 1];  // Bs[k][n]
  const long long b = blockIdx.z;
  A += b * sA;
  B += b * sB;
  C += b * sC;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * KB_TILE + ty;
  const int col = blockIdx.x * KB_TILE + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += KB_TILE) {
    const int ka = k0 + tx;
    As[ty][tx] = (row < M && ka < K) ? A[(long long)row * K + ka] : 0.f;
    if (trans_b) {
      const int n = blockIdx.x * KB_TILE + ty;
      const int k = k0 + tx;
      Bs[tx][ty] = (n < N && k < K) ? B[(long long)n * K + k] : 0.f;
    } else {
      const int k = k0 + ty;
      Bs[ty][tx] = (col < N && k < K) ? B[(long long)k * N + col] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KB_TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) {
    if (bias != nullptr) acc += bias[col];
    if (act == 1) acc = acc > 0.f ? acc : 0.f;
    else if (act == 2) acc = 0.5f * acc * (1.f + erff(acc * 0.70710678118654752f));
    C[(long long)row * N + col] = acc;
  }
}

static void kb_gemm_launch(const float* A, const float* B, const float* bias, float* C,
                           int64_t batch, int64_t M, int64_t N, int64_t K,
                           int64_t sA, int64_t sB, int64_t sC, bool trans_b, int act) {
  TORCH_CHECK(M < (1LL << 30) && N < (1LL << 30) && K < (1LL << 30), "gemm dims too large");
  TORCH_CHECK((M + KB_TILE - 1) / KB_TILE <= 65535 && batch <= 65535, "gemm grid too large");
  if (batch == 0 || M == 0 || N == 0) return;
  dim3 block(KB_TILE, KB_TILE);
  dim3 grid((unsigned)((N + KB_TILE - 1) / KB_TILE), (unsigned)((M + KB_TILE - 1) / KB_TILE), (unsigned)batch);
  kb_gemm_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      A, B, bias, C, (int)M, (int)N, (int)K, (long long)sA, (long long)sB, (long long)sC, trans_b ? 1 : 0, act);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// y = act(x @ w^T + b); x (..., IN), w (OUT, IN), b (OUT); act: 0 none, 1 relu, 2 gelu
torch::Tensor linear_act_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t act) {
  KB_CHECK_CUDA_F32(x);
  KB_CHECK_CUDA_F32(w);
  KB_CHECK_CUDA_F32(b);
  TORCH_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1) && b.numel() == w.size(0), "linear: shape mismatch");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t IN = w.size(1), OUT = w.size(0);
  const int64_t rows = IN == 0 ? 0 : x.numel() / IN;
  std::vector<int64_t> osz(x.sizes().begin(), x.sizes().end());
  osz.back() = OUT;
  auto y = torch::empty(osz, x.options());
  kb_gemm_launch(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                 1, rows, OUT, IN, 0, 0, 0, true, (int)act);
  return y;
}
"""

_ext = load_inline(
    name="kb_model_mlp3_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['linear_act_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = _ext.linear_act_fwd(x, self.fc1.weight, self.fc1.bias, 1)
        h = _ext.linear_act_fwd(h, self.fc2.weight, self.fc2.bias, 1)
        return _ext.linear_act_fwd(h, self.fc3.weight, self.fc3.bias, 0)
