// Partial: only even elements are written (the rest stay NaN-poisoned).
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && (i % 2) == 0) out[i] = a * x[i] + y[i];
}
