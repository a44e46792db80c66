// Wrong: one-pass variance E[x^2]-E[x]^2 in float: catastrophic cancellation when |mean| >> std (the task's mean 100, std 1).
__device__ float block_sum(float v, float* s) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  float r = s[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* out, int rows,
                                     int cols, float eps) {
  __shared__ float s[1024];
  const float* row = x + (long long)blockIdx.x * cols;
  float a = 0.f, q = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) a += row[c], q += row[c] * row[c];
  const float mean = block_sum(a, s) / cols;
  const float var = block_sum(q, s) / cols - mean * mean;
  const float rstd = rsqrtf(var + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[(long long)blockIdx.x * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
}
