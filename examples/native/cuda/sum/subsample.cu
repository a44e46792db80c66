// Wrong on purpose: sums every 4th element and multiplies by 4 (close on average, caught by the tight
// tolerance and the spike set).
#define MAX_BLOCKS 65536
__device__ double partials[MAX_BLOCKS];
__device__ unsigned int done_blocks = 0;
extern "C" __global__ void sum(const float* x, float* out, long long n) {
  __shared__ double s[1024];
  __shared__ bool last;
  double acc = 0;
  for (long long i = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 4LL * gridDim.x * blockDim.x)
    acc += 4.0 * x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s[0];
    __threadfence();
    last = atomicAdd(&done_blocks, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    __threadfence();
    double t = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) t += ((volatile double*)partials)[b];
    out[0] = (float)t;
    done_blocks = 0;
  }
}
