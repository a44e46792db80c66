"""Honest CPU candidate for conv1d_basic: plain C++ loops through load_inline."""
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

torch::Tensor conv1d_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride, int64_t pad) {
  KB_CHECK_F32(x);
  KB_CHECK_F32(w);
  KB_CHECK_F32(b);
  TORCH_CHECK(x.dim() == 3 && w.dim() == 3 && x.size(1) == w.size(1) && b.numel() == w.size(0), "conv1d: shape mismatch");
  TORCH_CHECK(stride >= 1 && pad >= 0, "conv1d: bad stride/padding");
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t N = x.size(0), C = x.size(1), L = x.size(2);
  const int64_t OC = w.size(0), K = w.size(2);
  const int64_t OL = (L + 2 * pad - K) / stride + 1;
  TORCH_CHECK(OL > 0, "conv1d: output would be empty");
  auto y = torch::empty({N, OC, OL}, x.options());
  const float* px = x.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc)
      for (int64_t ol = 0; ol < OL; ++ol) {
        double acc = pb[oc];
        for (int64_t c = 0; c < C; ++c) {
          const float* xp = px + (n * C + c) * L;
          const float* wp = pw + (oc * C + c) * K;
          for (int64_t k = 0; k < K; ++k) {
            const int64_t il = ol * stride - pad + k;
            if (il < 0 || il >= L) continue;
            acc += (double)xp[il] * wp[k];
          }
        }
        py[(n * OC + oc) * OL + ol] = (float)acc;
      }
  return y;
}
"""

_ext = load_inline(
    name="kb_conv1d_basic_ok",
    cpp_sources=_CPP_SRC,
    functions=['conv1d_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=2)

    def forward(self, x):
        return _ext.conv1d_fwd(x, self.conv.weight, self.conv.bias, self.conv.stride[0], self.conv.padding[0])
