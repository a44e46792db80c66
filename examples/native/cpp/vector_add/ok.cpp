// Correct candidate: same result, restrict-qualified so the compiler vectorizes without alias checks.
#include <cstdint>

extern "C" void vector_add(const float* __restrict a, const float* __restrict b,
                           float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
