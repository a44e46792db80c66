// Wrong: copies instead of transposing.
extern "C" __global__ void transpose(const float* x, float* out, int rows, int cols) {
  const int c = blockIdx.x * 32 + threadIdx.x;
  for (int j = 0; j < 32; j += 8) {
    const int r = blockIdx.y * 32 + threadIdx.y + j;
    if (r < rows && c < cols) out[(long long)r * cols + c] = x[(long long)r * cols + c];
  }
}
