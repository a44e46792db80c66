// A fake CUDA driver for testing kjudge-canary on machines without a GPU: every symbol the
// runner's loader (src/runner/cuda_driver.cpp) resolves, plus cuEventQuery, backed by host memory.
// The kernel is run on the CPU. $KJ_FAKE_CUDA picks how the "GPU" misbehaves:
//   ok (default) | no_device | zero_devices | hang_init | jit_fail | launch_fail | kernel_hang |
//   corrupt | memset_corrupt | teardown_fault
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr int kSuccess = 0;
constexpr int kErrInvalidValue = 1;
constexpr int kErrNoDevice = 100;
constexpr int kErrInvalidPtx = 218;
constexpr int kErrNotFound = 500;
constexpr int kErrNotReady = 600;
constexpr int kErrIllegalAddress = 700;
constexpr int kErrLaunchFailed = 719;

std::string mode() {
  const char* m = std::getenv("KJ_FAKE_CUDA");
  return m ? m : "ok";
}

int g_launched = 0;  // kernel_hang: events recorded after a launch never complete
int g_ctx_token = 0, g_module_token = 0, g_func_token = 0, g_event_token = 0;

struct KernelArgs {
  unsigned n;
  float a;
  std::uint64_t x, y;
};

}  // namespace

extern "C" {

int cuInit(unsigned) {
  const std::string m = mode();
  if (m == "no_device") return kErrNoDevice;
  if (m == "hang_init")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  return kSuccess;
}
int cuDriverGetVersion(int* v) {
  *v = 13000;
  return kSuccess;
}
int cuDeviceGetCount(int* n) {
  *n = mode() == "zero_devices" ? 0 : 1;
  return kSuccess;
}
int cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return kErrInvalidValue;
  *d = 0;
  return kSuccess;
}
int cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "Fake GPU", static_cast<std::size_t>(len));
  return kSuccess;
}
int cuDeviceGetAttribute(int* v, int, int) {
  *v = 0;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** ctx, int) {
  *ctx = &g_ctx_token;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void*) { return kSuccess; }
int cuCtxSynchronize() { return kSuccess; }
int cuCtxGetLimit(std::size_t* v, int) {
  *v = 0;
  return kSuccess;
}
int cuCtxSetLimit(int, std::size_t) { return kSuccess; }
int cuCtxResetPersistingL2Cache() { return kSuccess; }

int cuModuleLoadData(void** mod, const void* image) {
  // The canary's PTX, as the real JIT would first see it.
  const char* ptx = static_cast<const char*>(image);
  if (mode() == "jit_fail" || !std::strstr(ptx, ".version") || !std::strstr(ptx, ".entry kj_canary_saxpy("))
    return kErrInvalidPtx;
  *mod = &g_module_token;
  return kSuccess;
}
int cuModuleUnload(void*) { return kSuccess; }
int cuModuleGetFunction(void** fn, void*, const char* name) {
  if (std::strcmp(name, "kj_canary_saxpy") != 0) return kErrNotFound;
  *fn = &g_func_token;
  return kSuccess;
}
int cuFuncSetAttribute(void*, int, int) { return kSuccess; }

int cuMemAlloc_v2(std::uint64_t* p, std::size_t bytes) {
  void* m = std::malloc(bytes);
  if (!m) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  std::memset(m, 0x5A, bytes);  // not what the canary expects, so a skipped memset shows
  *p = reinterpret_cast<std::uintptr_t>(m);
  return kSuccess;
}
int cuMemFree_v2(std::uint64_t p) {
  std::free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)));
  return mode() == "teardown_fault" ? kErrIllegalAddress : kSuccess;
}
int cuMemcpyHtoD_v2(std::uint64_t dst, const void* src, std::size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)), src, bytes);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* dst, std::uint64_t src, std::size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)), bytes);
  return kSuccess;
}
int cuMemsetD8_v2(std::uint64_t p, unsigned char v, std::size_t n) {
  auto* b = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(p));
  std::memset(b, v, n);
  if (mode() == "memset_corrupt" && n > 1000) b[1000] ^= 0x01;
  return kSuccess;
}

int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned,
                   void*, void** params, void**) {
  if (fn != &g_func_token || !params || gx * gy * gz == 0 || bx * by * bz == 0) return kErrInvalidValue;
  if (mode() == "launch_fail") return kErrLaunchFailed;
  KernelArgs k;
  std::memcpy(&k.n, params[0], sizeof k.n);
  std::memcpy(&k.a, params[1], sizeof k.a);
  std::memcpy(&k.x, params[2], sizeof k.x);
  std::memcpy(&k.y, params[3], sizeof k.y);
  const auto* x = reinterpret_cast<const float*>(static_cast<std::uintptr_t>(k.x));
  auto* y = reinterpret_cast<float*>(static_cast<std::uintptr_t>(k.y));
  for (unsigned i = 0; i < k.n; ++i) y[i] = k.a * x[i] + y[i];
  if (mode() == "corrupt") y[k.n / 2] += 1.0f;
  g_launched = 1;
  return kSuccess;
}

int cuEventCreate(void** ev, unsigned) {
  *ev = &g_event_token;
  return kSuccess;
}
int cuEventDestroy_v2(void*) { return kSuccess; }
int cuEventRecord(void*, void*) { return kSuccess; }
int cuEventSynchronize(void*) { return kSuccess; }
int cuEventElapsedTime_v2(float* ms, void*, void*) {
  *ms = 0;
  return kSuccess;
}
int cuEventQuery(void*) { return mode() == "kernel_hang" && g_launched ? kErrNotReady : kSuccess; }

int cuGetErrorName(int r, const char** name) {
  switch (r) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kErrInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
    case kErrNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case kErrInvalidPtx: *name = "CUDA_ERROR_INVALID_PTX"; return kSuccess;
    case kErrNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
    case kErrNotReady: *name = "CUDA_ERROR_NOT_READY"; return kSuccess;
    case kErrIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return kSuccess;
    case kErrLaunchFailed: *name = "CUDA_ERROR_LAUNCH_FAILED"; return kSuccess;
    default: return kErrInvalidValue;
  }
}

}  // extern "C"
