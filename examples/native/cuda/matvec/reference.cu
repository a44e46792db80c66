// y = A x, one warp per row (8 rows per 256-thread block), accumulated in double.
extern "C" __global__ void matvec(const float* a, const float* x, float* y, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  double acc = 0;
  for (int c = lane; c < cols; c += 32) acc += (double)a[(long long)row * cols + c] * x[c];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = (float)acc;
}
