// Row-wise softmax, one block per row, three passes over the row (max, sum of exp in double, write).
extern "C" __global__ void softmax(const float* x, float* out, int rows, int cols) {
  __shared__ float smax[1024];
  __shared__ double ssum[1024];
  const int r = blockIdx.x;
  if (r >= rows) return;
  const float* row = x + (long long)r * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  smax[threadIdx.x] = m;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) smax[threadIdx.x] = fmaxf(smax[threadIdx.x], smax[threadIdx.x + w]);
    __syncthreads();
  }
  m = smax[0];
  double s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += exp((double)row[c] - m);
  ssum[threadIdx.x] = s;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) ssum[threadIdx.x] += ssum[threadIdx.x + w];
    __syncthreads();
  }
  const double inv = 1.0 / ssum[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long)r * cols + c] = (float)(exp((double)row[c] - m) * inv);
}
