// Wrong: an exclusive scan (off by one element everywhere).
#include <cuda_runtime.h>
__global__ void shift(const int* incl, const int* x, int* out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = incl[i] - x[i];
}
__global__ void block_scan(const int* x, int* out, int* totals, long long n) {
  __shared__ int s[1024];
  const long long i = (long long)blockIdx.x * 1024 + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0;
  __syncthreads();
  for (int d = 1; d < 1024; d *= 2) {
    const int v = threadIdx.x >= d ? s[threadIdx.x - d] : 0;
    __syncthreads();
    s[threadIdx.x] += v;
    __syncthreads();
  }
  if (i < n) out[i] = s[threadIdx.x];
  if (threadIdx.x == 1023) totals[blockIdx.x] = s[1023];
}
__global__ void scan_totals(int* totals, int nb) {
  if (threadIdx.x != 0) return;
  int run = 0;
  for (int b = 0; b < nb; ++b) { const int t = totals[b]; totals[b] = run; run += t; }
}
__global__ void add_offsets(int* out, const int* totals, long long n) {
  const long long i = (long long)blockIdx.x * 1024 + threadIdx.x;
  if (i < n) out[i] += totals[blockIdx.x];
}
extern "C" void scan(const int* x, int* out, long long n) {
  static int *totals = nullptr, *tmp = nullptr;
  const long long nb = (n + 1023) / 1024;
  if (!totals) cudaMalloc(&totals, nb * sizeof(int)), cudaMalloc(&tmp, n * sizeof(int));
  block_scan<<<(unsigned)nb, 1024>>>(x, tmp, totals, n);
  scan_totals<<<1, 32>>>(totals, (int)nb);
  add_offsets<<<(unsigned)nb, 1024>>>(tmp, totals, n);
  shift<<<(unsigned)nb, 1024>>>(tmp, x, out, n);
}
