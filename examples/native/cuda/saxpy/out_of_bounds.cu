// Crash: writes far past the end of `out` (an illegal address; the runner's cuCtxSynchronize reports it).
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i * 4096] = a * x[i] + y[i];
}
