// Honest: float4 loads, float accumulation per thread, warp shuffles, one partial per block, and the
// last block reduces the partials (threadfence reduction). One launch per call.
#define MAX_BLOCKS 65536
__device__ float partials[MAX_BLOCKS];
__device__ unsigned int done_blocks = 0;

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ float block_sum(float v) {
  __shared__ float w[32];
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) w[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? w[threadIdx.x] : 0.f;
  if (threadIdx.x < 32) v = warp_sum(v);
  return v;
}

extern "C" __global__ void sum(const float* __restrict__ x, float* out, long long n) {
  __shared__ bool last;
  float acc = 0.f;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long n4 = n / 4;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (long long i = n4 * 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();
    last = atomicAdd(&done_blocks, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) {
    __threadfence();
    float t = 0.f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) t += ((volatile float*)partials)[b];
    t = block_sum(t);
    if (threadIdx.x == 0) {
      out[0] = t;
      done_blocks = 0;
    }
  }
}
