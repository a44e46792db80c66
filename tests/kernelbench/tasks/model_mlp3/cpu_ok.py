"""Honest CPU candidate for model_mlp3: plain C++ loops through load_inline."""
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

// C (M x N) = A (M x K) * op(B) (+ bias) with activation (0 none, 1 relu, 2 gelu-erf); double accumulation.
static void kb_gemm(const float* A, const float* B, const float* bias, float* C,
                    int64_t M, int64_t N, int64_t K, bool trans_b, int act) {
  std::vector<double> acc((size_t)N);
  for (int64_t i = 0; i < M; ++i) {
    const float* a = A + i * K;
    if (trans_b) {
      for (int64_t j = 0; j < N; ++j) {
        const float* b = B + j * K;
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k) s += (double)a[k] * (double)b[k];
        acc[j] = s;
      }
    } else {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        const double av = a[k];
        const float* b = B + k * N;
        for (int64_t j = 0; j < N; ++j) acc[j] += av * (double)b[j];
      }
    }
    float* c = C + i * N;
    for (int64_t j = 0; j < N; ++j) {
      double v = acc[j];
      if (bias != nullptr) v += bias[j];
      if (act == 1) v = v > 0.0 ? v : 0.0;
      else if (act == 2) v = 0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440));
      c[j] = (float)v;
    }
  }
}

// y = act(x @ w^T + b); x (..., IN), w (OUT, IN), b (OUT)
torch::Tensor linear_act_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t act) {
  KB_CHECK_F32(x);
  KB_CHECK_F32(w);
  KB_CHECK_F32(b);
  TORCH_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1) && b.numel() == w.size(0), "linear: shape mismatch");
  x = x.contiguous();
  w = w.contiguous();
  b = b.contiguous();
  const int64_t IN = w.size(1), OUT = w.size(0);
  const int64_t rows = IN == 0 ? 0 : x.numel() / IN;
  std::vector<int64_t> osz(x.sizes().begin(), x.sizes().end());
  osz.back() = OUT;
  auto y = torch::empty(osz, x.options());
  kb_gemm(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), rows, OUT, IN, true, (int)act);
  return y;
}
"""

_ext = load_inline(
    name="kb_model_mlp3_ok",
    cpp_sources=_CPP_SRC,
    functions=['linear_act_fwd'],
    extra_cflags=["-O2"],
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
