// Wrong candidate: off-by-one loop bound, so the last element is never written. The runner poisons
// outputs with NaN first, so the unwritten element is caught (expect INCORRECT).
#include <cstdint>

extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i + 1 < n; ++i) out[i] = a[i] + b[i];
}
