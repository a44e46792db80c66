// LayerNorm over each row: mean and variance (two passes, double), then gamma*(x-mean)/sqrt(var+eps)+beta.
__device__ double block_sum(double v, double* s) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  double r = s[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void layernorm(const float* x, const float* gamma, const float* beta, float* out, int rows,
                                     int cols, float eps) {
  __shared__ double s[1024];
  const int r = blockIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  double a = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) a += row[c];
  const double mean = block_sum(a, s) / cols;
  double q = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) q += (row[c] - mean) * (row[c] - mean);
  const double rstd = 1.0 / sqrt(block_sum(q, s) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[(long long)r * cols + c] = (float)((row[c] - mean) * rstd * gamma[c] + beta[c]);
}
