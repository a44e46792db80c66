// Wrong: writes zeros (fast, and "close" in absolute terms: every softmax value is ~1/cols).
extern "C" __global__ void softmax(const float* x, float* out, int rows, int cols) {
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long)blockIdx.x * cols + c] = 0.f;
}
