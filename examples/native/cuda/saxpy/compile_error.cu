extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x
  if (i < n) out[i] = a * x[i] + y[i];
}
