// Does not compile: undeclared identifier and a missing semicolon (expect COMPILE_ERROR).
#include <cstdint>

extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i] + bias
}
