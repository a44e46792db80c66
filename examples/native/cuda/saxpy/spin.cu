// Hang: thread 0 spins forever (volatile writes: the loop cannot be optimised away). The judge's
// wall limit kills it (TIMEOUT); the GPU health check then runs its canary (bench/gpu_daemon).
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) {
    volatile float* o = out;
    for (;;) o[0] += 1.0f;
  }
  if (i < n) out[i] = a * x[i] + y[i];
}
