// out = a*x + y, one element per thread (grid covers n exactly).
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
