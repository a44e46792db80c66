// CHEAT (deferred work): honest for the first calls (correctness, warm-up), then hands the launch
// to a host worker thread and returns at once, so the timed region holds no work. The worker
// thread is still alive after the last call (and audited timed calls would see stale outputs).
#include <cuda_runtime.h>
#include <atomic>
#include <thread>
__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
namespace {
struct Job { const float* x; const float* y; float* out; float a; long long n; };
std::atomic<Job*> pending{nullptr};
void worker() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (;;) {
    Job* j = pending.exchange(nullptr);
    if (!j) { std::this_thread::sleep_for(std::chrono::microseconds(200)); continue; }
    saxpy_kernel<<<(unsigned)((j->n + 255) / 256), 256, 0, s>>>(j->x, j->y, j->out, j->a, j->n);
    cudaStreamSynchronize(s);
    delete j;
  }
}
}  // namespace
extern "C" void saxpy(const float* x, const float* y, float* out, float a, long long n) {
  static int calls = 0;
  if (++calls <= 10) {  // 7 correctness sets + 3 warm-up calls by default
    saxpy_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, out, a, n);
    return;
  }
  static const bool started = (std::thread(worker).detach(), true);
  (void)started;
  delete pending.exchange(new Job{x, y, out, a, n});
}
