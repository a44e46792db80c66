// Never returns. The loop reads a volatile flag on every iteration, so it has an observable side
// effect and the compiler may not assume it terminates (expect TIMEOUT).
#include <cstdint>

extern "C" void vector_add(const float* a, const float* b, float* out, int64_t n) {
  volatile bool keep_going = true;
  while (keep_going) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
}
