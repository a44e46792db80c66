"""Cheat/bug: correct for the first three calls, raises from the fourth on."""
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
#define KB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KB_MAX(a, b) ((a) > (b) ? (a) : (b))

torch::Tensor maxpool2d_fwd(torch::Tensor x, int64_t k, int64_t stride, int64_t pad) {
  KB_CHECK_F32(x);
  TORCH_CHECK(x.dim() == 4, "pool2d: expected (N, C, H, W)");
  TORCH_CHECK(k >= 1 && stride >= 1 && pad >= 0 && 2 * pad <= k, "pool2d: bad window");
  x = x.contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;
  TORCH_CHECK(OH > 0 && OW > 0, "pool2d: output would be empty");
  auto y = torch::empty({N, C, OH, OW}, x.options());
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const float* xp = px + nc * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t hs0 = oh * stride - pad, ws0 = ow * stride - pad;
        const int64_t hs = KB_MAX(hs0, (int64_t)0), ws = KB_MAX(ws0, (int64_t)0);
        const int64_t he = KB_MIN(hs0 + k, H), we = KB_MIN(ws0 + k, W);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t ih = hs; ih < he; ++ih)
          for (int64_t iw = ws; iw < we; ++iw) { const float v = xp[ih * W + iw]; if (v > m) m = v; }
        py[((nc * OH) + oh) * OW + ow] = m;
      }
  }
  return y;
}
"""

_ext = load_inline(
    name="kb_pool_max2d_ok",
    cpp_sources=_CPP_SRC,
    functions=['maxpool2d_fwd'],
    extra_cflags=["-O2"],
    verbose=False,
)

_CALLS = [0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k, self.stride, self.pad = 2, 2, 0

    def forward(self, x):
        _CALLS[0] += 1
        if _CALLS[0] >= 4:
            raise RuntimeError("maxpool2d: scratch workspace exhausted")
        return _ext.maxpool2d_fwd(x, self.k, self.stride, self.pad)
