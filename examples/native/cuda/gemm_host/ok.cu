// Honest: 64x64 block tiles, 16-deep K slices in shared memory, 4x4 outputs per thread in registers
// (n a multiple of 64).
#define BM 64
#define BK 16
__global__ void __launch_bounds__(256) gemm_rb(const float* __restrict__ a, const float* __restrict__ b,
                                               float* __restrict__ c, int n) {
  __shared__ float as[BK][BM + 4], bs[BK][BM];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int r0 = blockIdx.y * BM, c0 = blockIdx.x * BM;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += BK) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int idx = tid + l * 256;
      as[idx % BK][idx / BK] = a[(r0 + idx / BK) * n + k0 + idx % BK];
      bs[idx / BM][idx % BM] = b[(k0 + idx / BM) * n + c0 + idx % BM];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[k][ty + 16 * i], bv[i] = bs[k][tx + 16 * i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) c[(r0 + ty + 16 * i) * n + c0 + tx + 16 * j] = acc[i][j];
}
extern "C" void gemm(const float* a, const float* b, float* c, int n) {
  gemm_rb<<<dim3(n / BM, n / BM), dim3(16, 16)>>>(a, b, c, n);
}
