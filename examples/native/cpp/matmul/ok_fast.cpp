// Correct and faster than the naive reference: each row of c is computed 16 columns at a time in a
// small accumulator that stays in registers, and the inner loop over those 16 columns has a fixed
// trip count, so the compiler vectorizes it even at -O2. b is read along rows (contiguous), and each
// c[i][j] still sums a[i][k] * b[k][j] over k in ascending order, exactly like the reference.
#include <cstdint>

namespace {
constexpr int64_t kTile = 16;
}

extern "C" void matmul(const float* __restrict a, const float* __restrict b, float* __restrict c,
                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float* arow = a + i * n;
    int64_t j0 = 0;
    for (; j0 + kTile <= n; j0 += kTile) {
      float acc[kTile] = {};
      for (int64_t k = 0; k < n; ++k) {
        const float aik = arow[k];
        const float* brow = b + k * n + j0;
        for (int64_t jj = 0; jj < kTile; ++jj) acc[jj] += aik * brow[jj];
      }
      for (int64_t jj = 0; jj < kTile; ++jj) c[i * n + j0 + jj] = acc[jj];
    }
    for (int64_t j = j0; j < n; ++j) {  // columns left over when n is not a multiple of kTile
      float sum = 0.0f;
      for (int64_t k = 0; k < n; ++k) sum += arow[k] * b[k * n + j];
      c[i * n + j] = sum;
    }
  }
}
