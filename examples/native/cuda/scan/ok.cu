// Honest: reduce-then-scan. Phase 1: per-tile totals (4096 ints per 256-thread block, int4 loads).
// Phase 2: one block scans the tile totals (warp shuffles). Phase 3: each block rescans its tile
// with the tile's offset and writes the result. Reads x twice, writes out once.
#include <cuda_runtime.h>
#define THREADS 256
#define PER 16  // ints per thread
#define TILE (THREADS * PER)
__device__ int warp_incl(int v) {
  for (int o = 1; o < 32; o *= 2) {
    const int u = __shfl_up_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) >= o) v += u;
  }
  return v;
}
// exclusive scan across the block of one value per thread; returns the block total in *total
__device__ int block_excl(int v, int* total) {
  __shared__ int w[THREADS / 32];
  const int incl = warp_incl(v);
  if ((threadIdx.x & 31) == 31) w[threadIdx.x / 32] = incl;
  __syncthreads();
  if (threadIdx.x < 32) {
    int t = threadIdx.x < THREADS / 32 ? w[threadIdx.x] : 0;
    t = warp_incl(t);
    if (threadIdx.x < THREADS / 32) w[threadIdx.x] = t;
  }
  __syncthreads();
  const int warp_off = threadIdx.x >= 32 ? w[threadIdx.x / 32 - 1] : 0;
  *total = w[THREADS / 32 - 1];
  __syncthreads();
  return warp_off + incl - v;
}
__device__ void load(const int* x, long long base, long long n, int (&v)[PER]) {
  const long long i0 = base + (long long)threadIdx.x * PER;
  if (i0 + PER <= n) {
#pragma unroll
    for (int k = 0; k < PER; k += 4) {
      const int4 q = *reinterpret_cast<const int4*>(x + i0 + k);
      v[k] = q.x, v[k + 1] = q.y, v[k + 2] = q.z, v[k + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < PER; ++k) v[k] = i0 + k < n ? x[i0 + k] : 0;
  }
}
__global__ void tile_totals(const int* __restrict__ x, int* totals, long long n) {
  int v[PER];
  load(x, (long long)blockIdx.x * TILE, n, v);
  int s = 0;
#pragma unroll
  for (int k = 0; k < PER; ++k) s += v[k];
  int total;
  block_excl(s, &total);
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}
__global__ void scan_totals(int* totals, int nb) {  // in place, exclusive; one block
  int carry = 0;
  for (int base = 0; base < nb; base += THREADS) {
    const int i = base + threadIdx.x;
    const int v = i < nb ? totals[i] : 0;
    int total;
    const int e = block_excl(v, &total);
    if (i < nb) totals[i] = carry + e;
    carry += total;
  }
}
__global__ void tile_scan(const int* __restrict__ x, int* __restrict__ out, const int* totals, long long n) {
  int v[PER];
  const long long base = (long long)blockIdx.x * TILE;
  load(x, base, n, v);
  int s = 0;
#pragma unroll
  for (int k = 0; k < PER; ++k) s += v[k];
  int total;
  int run = totals[blockIdx.x] + block_excl(s, &total);
  const long long i0 = base + (long long)threadIdx.x * PER;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    run += v[k];
    if (i0 + k < n) out[i0 + k] = run;
  }
}
extern "C" void scan(const int* x, int* out, long long n) {
  static int* totals = nullptr;
  static long long cap = 0;
  const long long nb = (n + TILE - 1) / TILE;
  if (nb > cap) {
    cudaFree(totals);
    cudaMalloc(&totals, nb * sizeof(int));
    cap = nb;
  }
  tile_totals<<<(unsigned)nb, THREADS>>>(x, totals, n);
  scan_totals<<<1, THREADS>>>(totals, (int)nb);
  tile_scan<<<(unsigned)nb, THREADS>>>(x, out, totals, n);
}
