// Crashes: writes through a null pointer (expect RUNTIME_ERROR, SIGSEGV). Both the pointer and the
// pointee are volatile: the compiler must load the pointer at run time (so it cannot see the null and
// turn the store into a trap) and must perform the store (points-to analysis cannot delete it).
#include <cstdint>

extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
  volatile float* volatile target = nullptr;
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  *target = out[0];
}
