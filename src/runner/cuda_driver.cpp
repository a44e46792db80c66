#include "runner/cuda_driver.h"

#include <dlfcn.h>

#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "runner/error.h"

namespace kjudge::runner {

namespace {

template <typename F>
void resolve(void* handle, F*& fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* sym = dlsym(handle, n)) {
      static_assert(sizeof(fn) == sizeof(sym));
      std::memcpy(&fn, &sym, sizeof(fn));
      return;
    }
  }
  throw RunnerError(fmt::format("the CUDA driver library lacks {}", *names.begin()));
}

}  // namespace

CudaDriver CudaDriver::open(const std::string& library) {
  CudaDriver d;
  // Never closed: the driver keeps threads and state until the process exits.
  d.handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.handle_) {
    const char* e = dlerror();
    throw RunnerError(fmt::format("cannot load the CUDA driver ({}): {} — no NVIDIA driver on this machine, or "
                                  "the sandbox's GPU profile does not expose it",
                                  library, e ? e : "unknown error"));
  }
  void* h = d.handle_;
  resolve(h, d.Init, {"cuInit"});
  resolve(h, d.DriverGetVersion, {"cuDriverGetVersion"});
  resolve(h, d.DeviceGet, {"cuDeviceGet"});
  resolve(h, d.DeviceGetCount, {"cuDeviceGetCount"});
  resolve(h, d.DeviceGetName, {"cuDeviceGetName"});
  resolve(h, d.DeviceGetAttribute, {"cuDeviceGetAttribute"});
  resolve(h, d.DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  resolve(h, d.DevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  resolve(h, d.CtxSetCurrent, {"cuCtxSetCurrent"});
  resolve(h, d.CtxSynchronize, {"cuCtxSynchronize"});
  resolve(h, d.CtxGetLimit, {"cuCtxGetLimit"});
  resolve(h, d.CtxSetLimit, {"cuCtxSetLimit"});
  resolve(h, d.CtxResetPersistingL2Cache, {"cuCtxResetPersistingL2Cache"});
  resolve(h, d.ModuleLoadData, {"cuModuleLoadData"});
  resolve(h, d.ModuleUnload, {"cuModuleUnload"});
  resolve(h, d.ModuleGetFunction, {"cuModuleGetFunction"});
  resolve(h, d.FuncSetAttribute, {"cuFuncSetAttribute"});
  resolve(h, d.MemAlloc, {"cuMemAlloc_v2"});
  resolve(h, d.MemFree, {"cuMemFree_v2"});
  resolve(h, d.MemcpyHtoD, {"cuMemcpyHtoD_v2"});
  resolve(h, d.MemcpyDtoH, {"cuMemcpyDtoH_v2"});
  resolve(h, d.MemsetD8, {"cuMemsetD8_v2"});
  resolve(h, d.LaunchKernel, {"cuLaunchKernel"});
  resolve(h, d.EventCreate, {"cuEventCreate"});
  resolve(h, d.EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  resolve(h, d.EventRecord, {"cuEventRecord"});
  resolve(h, d.EventSynchronize, {"cuEventSynchronize"});
  resolve(h, d.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  resolve(h, d.GetErrorName, {"cuGetErrorName"});
  return d;
}

const CudaDriver& CudaDriver::load(const std::string& library) {
  static const CudaDriver d = open(library);
  return d;
}

std::string CudaDriver::error_name(cu::Result r) const {
  const char* name = nullptr;
  if (GetErrorName && GetErrorName(r, &name) == 0 && name) return name;
  return fmt::format("CUresult {}", r);
}

void CudaDriver::check(cu::Result r, const std::string& what) const {
  if (r != 0) throw RunnerError(fmt::format("{} failed: {}", what, error_name(r)));
}

}  // namespace kjudge::runner
