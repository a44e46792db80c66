// Host-launch mode: the entry receives device pointers and launches on the legacy default stream.
__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  saxpy_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, out, a, n);
}
