// Reference: out[i] = a[i] + b[i].
#include <cstdint>

extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
