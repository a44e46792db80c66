// Honest: one block per row; the row (cols <= 8192) is read once into registers as float4, max and
// sum by warp shuffles, exp in float.
#define MAX_PER_THREAD 8  // float4s per thread: 256 threads * 8 * 4 = 8192 columns
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <bool Max>
__device__ float block_all(float v) {
  __shared__ float w[32];
  __syncthreads();
  v = Max ? warp_max(v) : warp_sum(v);
  if ((threadIdx.x & 31) == 0) w[threadIdx.x / 32] = v;
  __syncthreads();
  const int nw = blockDim.x / 32;
  v = (threadIdx.x & 31) < nw ? w[threadIdx.x & 31] : (Max ? -INFINITY : 0.f);
  return Max ? warp_max(v) : warp_sum(v);
}
extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  const int r = blockIdx.x;
  if (r >= rows) return;
  const float4* row = reinterpret_cast<const float4*>(x + (long long)r * cols);
  float4* orow = reinterpret_cast<float4*>(out + (long long)r * cols);
  const int c4 = cols / 4;
  float4 v[MAX_PER_THREAD];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < MAX_PER_THREAD; ++k) {
    const int c = threadIdx.x + k * blockDim.x;
    v[k] = c < c4 ? __ldg(row + c) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  }
  m = block_all<true>(m);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < MAX_PER_THREAD; ++k) {
    v[k].x = expf(v[k].x - m), v[k].y = expf(v[k].y - m), v[k].z = expf(v[k].z - m), v[k].w = expf(v[k].w - m);
    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  const float inv = 1.f / block_all<false>(s);
#pragma unroll
  for (int k = 0; k < MAX_PER_THREAD; ++k) {
    const int c = threadIdx.x + k * blockDim.x;
    if (c < c4) orow[c] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
  }
}
