// Inclusive prefix sum (int32), host-launch mode, three phases: per-block scans of 1024 elements
// (Hillis-Steele in shared memory), one block scanning the block totals, then adding the offsets.
#include <cuda_runtime.h>
#define B 1024
__global__ void block_scan(const int* x, int* out, int* totals, long long n) {
  __shared__ int s[B];
  const long long i = (long long)blockIdx.x * B + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0;
  __syncthreads();
  for (int d = 1; d < B; d *= 2) {
    const int v = threadIdx.x >= d ? s[threadIdx.x - d] : 0;
    __syncthreads();
    s[threadIdx.x] += v;
    __syncthreads();
  }
  if (i < n) out[i] = s[threadIdx.x];
  if (threadIdx.x == B - 1) totals[blockIdx.x] = s[B - 1];
}
__global__ void scan_totals(int* totals, int nb) {  // in place, exclusive
  if (threadIdx.x != 0) return;
  int run = 0;
  for (int b = 0; b < nb; ++b) {
    const int t = totals[b];
    totals[b] = run;
    run += t;
  }
}
__global__ void add_offsets(int* out, const int* totals, long long n) {
  const long long i = (long long)blockIdx.x * B + threadIdx.x;
  if (i < n) out[i] += totals[blockIdx.x];
}
extern "C" void scan(const int* x, int* out, long long n) {
  static int* totals = nullptr;
  static long long cap = 0;
  const long long nb = (n + B - 1) / B;
  if (nb > cap) {
    cudaFree(totals);
    cudaMalloc(&totals, nb * sizeof(int));
    cap = nb;
  }
  block_scan<<<(unsigned)nb, B>>>(x, out, totals, n);
  scan_totals<<<1, 32>>>(totals, (int)nb);
  add_offsets<<<(unsigned)nb, B>>>(out, totals, n);
}
