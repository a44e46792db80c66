// Launch errors ignored: 2048 threads per block is an invalid configuration, the launch fails, the
// error is never checked, the outputs stay unwritten (NaN-poisoned) and the call "takes" no time.
__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  saxpy_kernel<<<(unsigned)((n + 2047) / 2048), 2048>>>(x, y, out, a, n);
}
