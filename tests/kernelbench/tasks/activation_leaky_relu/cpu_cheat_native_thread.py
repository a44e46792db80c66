"""Cheat: the C++ function returns an unfilled output; a detached std::thread fills it."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#define KB_CHECK_F32(t) TORCH_CHECK((t).device().is_cpu() && (t).scalar_type() == torch::kFloat32, #t " must be a float32 CPU tensor")

#include <atomic>
#include <chrono>
#include <thread>

// Calls started so far. A call's filler thread waits for the next call to start, so it is running,
// whatever the scheduler does, when forward returns and the harness looks; a real cheat would
// sleep a little instead and race the harness (the class is the same: deferred work).
static std::atomic<long> calls{0};

// Returns the output at once; a detached native thread fills it in later.
torch::Tensor leaky_relu_async_fwd(torch::Tensor x, double negative_slope) {
  KB_CHECK_F32(x);
  auto src = x.contiguous().clone();  // the thread's own copy: the caller's input may be gone by then
  auto out = torch::empty_like(src);
  const long mine = ++calls;
  std::thread([src, out, negative_slope, mine]() mutable {
    while (calls.load() == mine) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const float* px = src.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t n = src.numel();
    for (int64_t i = 0; i < n; ++i) {
      const double v = px[i];
      po[i] = (float)(v > 0.0 ? v : v * negative_slope);
    }
  }).detach();
  return out;
}
"""

_ext = load_inline(
    name="kb_activation_leaky_relu_async",
    cpp_sources=_CPP_SRC,
    functions=['leaky_relu_async_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return _ext.leaky_relu_async_fwd(x, self.negative_slope)
