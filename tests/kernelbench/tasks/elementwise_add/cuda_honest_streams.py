"""Honest: launches the add kernel on a side stream and makes the caller's stream wait
for it before returning (wait_stream both ways, record_stream for the allocator)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b);
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

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    c[i] = a[i] + b[i];
}

torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b) {
  KB_CHECK_CUDA_F32(a);
  KB_CHECK_CUDA_F32(b);
  TORCH_CHECK(a.sizes() == b.sizes(), "add: shape mismatch");
  const at::cuda::OptionalCUDAGuard guard(a.device());
  a = a.contiguous();
  b = b.contiguous();
  auto c = torch::empty_like(a);
  const int64_t n = a.numel();
  if (n > 0) {
    add_kernel<<<kb_blocks(n, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return c;
}
"""

_ext = load_inline(
    name="kb_elementwise_add_cuda_ok",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['add_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._side = None

    def forward(self, a, b):
        cur = torch.cuda.current_stream()
        if self._side is None:
            self._side = torch.cuda.Stream()
        side = self._side
        side.wait_stream(cur)  # the inputs were produced on the caller's stream
        with torch.cuda.stream(side):
            out = _ext.add_fwd(a, b)
        cur.wait_stream(side)  # the caller's stream now depends on the kernel
        a.record_stream(side)
        b.record_stream(side)
        out.record_stream(cur)
        return out
