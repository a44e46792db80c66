// 3x3 convolution, stride 1, zero padding 1: out[co][y][x] = sum_ci,ky,kx w[co][ci][ky][kx] * x[ci][y+ky-1][x+kx-1].
// Grid: (W/16, H/16, Cout), block 16x16, one output per thread, straight from global memory.
extern "C" __global__ void conv2d(const float* x, const float* w, float* out, int cin, int h, int wd) {
  const int ox = blockIdx.x * blockDim.x + threadIdx.x, oy = blockIdx.y * blockDim.y + threadIdx.y, co = blockIdx.z;
  if (ox >= wd || oy >= h) return;
  float acc = 0.f;
  for (int ci = 0; ci < cin; ++ci)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const int iy = oy + ky - 1, ix = ox + kx - 1;
        if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
          acc += w[((co * cin + ci) * 3 + ky) * 3 + kx] * x[((long long)ci * h + iy) * wd + ix];
      }
  out[((long long)co * h + oy) * wd + ox] = acc;
}
