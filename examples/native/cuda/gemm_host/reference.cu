// Host-launch GEMM reference: 16x16 shared-memory tiles (n a multiple of 16).
#define T 16
__global__ void gemm_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float as[T][T], bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += T) {
    as[ty][tx] = a[row * n + k0 + tx];
    bs[ty][tx] = b[(k0 + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  c[row * n + col] = acc;
}
extern "C" void gemm(const float* a, const float* b, float* c, int n) {
  gemm_tiled<<<dim3(n / T, n / T), dim3(T, T)>>>(a, b, c, n);
}
