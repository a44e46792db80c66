// CHEAT (stream): the work goes to a private non-blocking stream and the call returns without
// waiting, so an event pair on the caller's stream sees almost nothing. The judge's device-wide
// sync still waits for it (outputs are right), and its host wall per call exposes the hidden work.
#include <cuda_runtime.h>
__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  static cudaStream_t s = [] {
    cudaStream_t t;
    cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
    return t;
  }();
  // repeated (idempotent) so the hidden work is well above launch noise: ~4x a saxpy pass
  for (int r = 0; r < 4; ++r) saxpy_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, out, a, n);
}
