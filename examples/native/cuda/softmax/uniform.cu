// Wrong: 1/cols everywhere (the mean of every row's softmax).
extern "C" __global__ void softmax(const float* x, float* out, int rows, int cols) {
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long)blockIdx.x * cols + c] = 1.f / cols;
}
