// Honest: one warp per row, float4 loads of A and x, float accumulation, shuffle reduction.
extern "C" __global__ void matvec(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y,
                                  int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float4* r4 = reinterpret_cast<const float4*>(a + (long long)row * cols);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc = 0.f;
  for (int c = lane; c < cols / 4; c += 32) {
    const float4 u = __ldg(r4 + c), v = __ldg(x4 + c);
    acc += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
  }
  for (int c = cols / 4 * 4 + lane; c < cols; c += 32) acc += a[(long long)row * cols + c] * x[c];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = acc;
}
