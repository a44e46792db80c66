extern "C" __global__ void relu(const float* x, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
}
