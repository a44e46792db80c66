// Honest: 32x32 tile through shared memory (padded against bank conflicts): coalesced reads and writes.
extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[32][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  for (int j = 0; j < 32; j += 8) {
    const int r = blockIdx.y * 32 + threadIdx.y + j;
    if (r < rows && c < cols) t[threadIdx.y + j][threadIdx.x] = x[(long long)r * cols + c];
  }
  __syncthreads();
  const int r = blockIdx.y * 32 + threadIdx.x;
  for (int j = 0; j < 32; j += 8) {
    c = blockIdx.x * 32 + threadIdx.y + j;
    if (r < rows && c < cols) out[(long long)c * rows + r] = t[threadIdx.x][threadIdx.y + j];
  }
}
