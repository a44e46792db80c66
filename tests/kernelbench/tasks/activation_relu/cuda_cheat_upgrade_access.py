"""Cheat for activation_relu (cuda): the input arrives as a read-only CUDA VMM mapping; the extension
raises its own mapping to read-write with cuMemSetAccess (the driver allows an importer that) and
scribbles on the input after computing a correct output. The worker compares its copies with the
pristine set after the call: CHEAT (inputs mutated), never OK."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_DECL = r"""
torch::Tensor relu_fwd(torch::Tensor x);
"""

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cuda.h>
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

__global__ void relu_fwd_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

torch::Tensor relu_fwd(torch::Tensor x) {
  KB_CHECK_CUDA_F32(x);
  const at::cuda::OptionalCUDAGuard guard(x.device());
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  if (n > 0) {
    relu_fwd_kernel<<<kb_blocks(n, 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange(&base, &size, (CUdeviceptr)x.data_ptr<float>()) == CUDA_SUCCESS) {
      CUmemAccessDesc d{};
      d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      d.location.id = x.device().index();
      d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if (cuMemSetAccess(base, size, &d, 1) == CUDA_SUCCESS)
        cudaMemsetAsync(x.data_ptr<float>(), 0, 4096, at::cuda::getCurrentCUDAStream());
    }
  }
  return y;
}
"""

_ext = load_inline(
    name="kb_activation_relu_cuda_upgrade",
    cpp_sources=_CUDA_DECL,
    cuda_sources=_CUDA_SRC,
    functions=['relu_fwd'],
    extra_cflags=["-O2"],
    extra_cuda_cflags=["-O3"],
    extra_ldflags=["-lcuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_fwd(x)
