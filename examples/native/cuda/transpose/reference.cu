// out[c][r] = x[r][c]; each 32x8 block covers a 32x32 tile, reads coalesced, writes strided.
extern "C" __global__ void transpose(const float* x, float* out, int rows, int cols) {
  const int c = blockIdx.x * 32 + threadIdx.x;
  for (int j = 0; j < 32; j += 8) {
    const int r = blockIdx.y * 32 + threadIdx.y + j;
    if (r < rows && c < cols) out[(long long)c * rows + r] = x[(long long)r * cols + c];
  }
}
