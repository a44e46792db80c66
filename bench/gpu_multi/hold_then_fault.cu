// A held job that faults its GPU (bench/gpu_multi): the first thread to arrive sets a deadline
// HOLD_S seconds ahead, every thread spins until it (the job holds its GPU meanwhile, long enough
// for the bench to see it there), then writes far past the end of `out`: an illegal address.
#define HOLD_S 40ull

__device__ unsigned long long deadline_ns;  // 0 at module load

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long mine = now_ns() + HOLD_S * 1000000000ull;
  const unsigned long long first = atomicCAS(&deadline_ns, 0ull, mine);
  const unsigned long long until = first ? first : mine;
  while (now_ns() < until) {
  }
  if (i < n) out[i * 4096] = a * x[i] + y[i];
}
