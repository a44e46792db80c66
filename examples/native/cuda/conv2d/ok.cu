// Honest: the block's 18x18 input halo per input channel staged in shared memory, the output
// channel's 3x3 filters in shared memory (cin <= 64), same summation order as the reference.
extern "C" __global__ void conv2d(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                                  int cin, int h, int wd) {
  __shared__ float tile[18][18 + 1];
  __shared__ float filt[64 * 9];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int bx = blockIdx.x * 16, by = blockIdx.y * 16, co = blockIdx.z;
  for (int i = tid; i < cin * 9; i += 256) filt[i] = w[co * cin * 9 + i];
  float acc = 0.f;
  for (int ci = 0; ci < cin; ++ci) {
    __syncthreads();
    for (int i = tid; i < 18 * 18; i += 256) {
      const int ly = i / 18, lx = i % 18, iy = by + ly - 1, ix = bx + lx - 1;
      tile[ly][lx] = iy >= 0 && iy < h && ix >= 0 && ix < wd ? x[((long long)ci * h + iy) * wd + ix] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int ky = 0; ky < 3; ++ky)
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) acc += filt[ci * 9 + ky * 3 + kx] * tile[ty + ky][tx + kx];
  }
  if (bx + tx < wd && by + ty < h) out[((long long)co * h + by + ty) * wd + bx + tx] = acc;
}
