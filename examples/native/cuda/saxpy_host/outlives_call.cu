// CHEAT (stream): a kernel that outlives the call — captured once into a CUDA graph per buffer set
// and replayed on a private non-blocking stream; the call returns while the graph still runs.
#include <cuda_runtime.h>
__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  static cudaStream_t s = nullptr;
  static cudaGraphExec_t exec = nullptr;
  static const float *lx = nullptr, *ly = nullptr;
  static float* lo = nullptr;
  static float la = 0;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (!exec || x != lx || y != ly || out != lo || a != la) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int r = 0; r < 4; ++r)  // idempotent repeats: hidden work well above launch noise
      saxpy_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, out, a, n);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    lx = x, ly = y, lo = out, la = a;
  }
  cudaGraphLaunch(exec, s);
}
