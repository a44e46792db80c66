// The slice of the CUDA driver API kjudge-runner uses, loaded at run time with dlopen so the runner
// builds, links and runs on machines without an NVIDIA driver (it then fails a CUDA job cleanly).
// Types are declared here (the driver ABI is stable), so no CUDA toolkit is needed to build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kjudge::runner {

namespace cu {
using Result = int;  // CUresult; 0 = CUDA_SUCCESS
using Device = int;
using DevicePtr = std::uint64_t;
struct CtxSt;
struct ModSt;
struct FuncSt;
struct EventSt;
struct StreamSt;
using Context = CtxSt*;
using Module = ModSt*;
using Function = FuncSt*;
using Event = EventSt*;
using Stream = StreamSt*;

inline constexpr int kAttrL2CacheSize = 38;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
inline constexpr int kLimitPersistingL2CacheSize = 0x06;
inline constexpr int kErrorNotSupported = 801;
}  // namespace cu

struct CudaDriver {
  cu::Result (*Init)(unsigned) = nullptr;
  cu::Result (*DriverGetVersion)(int*) = nullptr;
  cu::Result (*DeviceGet)(cu::Device*, int) = nullptr;
  cu::Result (*DeviceGetCount)(int*) = nullptr;
  cu::Result (*DeviceGetName)(char*, int, cu::Device) = nullptr;
  cu::Result (*DeviceGetAttribute)(int*, int, cu::Device) = nullptr;
  cu::Result (*DevicePrimaryCtxRetain)(cu::Context*, cu::Device) = nullptr;
  cu::Result (*DevicePrimaryCtxRelease)(cu::Device) = nullptr;
  cu::Result (*CtxSetCurrent)(cu::Context) = nullptr;
  cu::Result (*CtxSynchronize)() = nullptr;
  cu::Result (*CtxGetLimit)(std::size_t*, int) = nullptr;
  cu::Result (*CtxSetLimit)(int, std::size_t) = nullptr;
  cu::Result (*CtxResetPersistingL2Cache)() = nullptr;
  cu::Result (*ModuleLoadData)(cu::Module*, const void*) = nullptr;
  cu::Result (*ModuleUnload)(cu::Module) = nullptr;
  cu::Result (*ModuleGetFunction)(cu::Function*, cu::Module, const char*) = nullptr;
  cu::Result (*FuncSetAttribute)(cu::Function, int, int) = nullptr;
  cu::Result (*MemAlloc)(cu::DevicePtr*, std::size_t) = nullptr;
  cu::Result (*MemFree)(cu::DevicePtr) = nullptr;
  cu::Result (*MemcpyHtoD)(cu::DevicePtr, const void*, std::size_t) = nullptr;
  cu::Result (*MemcpyDtoH)(void*, cu::DevicePtr, std::size_t) = nullptr;
  cu::Result (*MemsetD8)(cu::DevicePtr, unsigned char, std::size_t) = nullptr;
  cu::Result (*LaunchKernel)(cu::Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             cu::Stream, void**, void**) = nullptr;
  cu::Result (*EventCreate)(cu::Event*, unsigned) = nullptr;
  cu::Result (*EventDestroy)(cu::Event) = nullptr;
  cu::Result (*EventRecord)(cu::Event, cu::Stream) = nullptr;
  cu::Result (*EventSynchronize)(cu::Event) = nullptr;
  cu::Result (*EventElapsedTime)(float*, cu::Event, cu::Event) = nullptr;
  cu::Result (*GetErrorName)(cu::Result, const char**) = nullptr;

  // dlopen(`library`) and resolve every symbol; throws RunnerError naming what is missing.
  static const CudaDriver& load(const std::string& library = "libcuda.so.1");
  // Same, but a fresh instance (tests: a library that does not exist).
  static CudaDriver open(const std::string& library);

  std::string error_name(cu::Result r) const;
  // Throws RunnerError "<what> failed: CUDA_ERROR_..." unless r == 0.
  void check(cu::Result r, const std::string& what) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace kjudge::runner
