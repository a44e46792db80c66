// The few CUPTI callback-API declarations the kernel recorder uses, written out so that it builds
// without the CUDA toolkit and loads libcupti only at run time (dlopen): a node without CUPTI
// reports "unavailable" instead of failing to load. Values are from CUDA 13's cupti_callbacks.h,
// cupti_driver_cbid.h and cupti_runtime_cbid.h; CUPTI only appends to these, and
// cupti_abi_check.h compares them with the real headers wherever the toolkit is installed.
#pragma once

#include <cstdint>

namespace kjt {

using CUptiResult = int;
using CallbackId = std::uint32_t;
using SubscriberHandle = void*;
using CUfunction = void*;

enum Domain : int { kDomainDriver = 1, kDomainRuntime = 2 };
enum Site : int { kApiEnter = 0, kApiExit = 1 };
constexpr CUptiResult kCuptiSuccess = 0;

// CUpti_CallbackData: the same members in the same order.
struct CallbackData {
  int callbackSite;
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;
  void* context;
  std::uint32_t contextUid;
  std::uint64_t* correlationData;
  std::uint32_t correlationId;
};

using CallbackFunc = void (*)(void* userdata, Domain domain, CallbackId cbid, const void* cbdata);

// Driver launch cbids whose params begin with the CUfunction (cuLaunch, cuLaunchGrid[Async],
// cuLaunchKernel[_ptsz], cuLaunchCooperativeKernel[_ptsz]).
constexpr CallbackId kDriverFirstArgFunction[] = {115, 116, 117, 307, 442, 477, 478};
// cuLaunchKernelEx[_ptsz]: params {const CUlaunchConfig*, CUfunction, ...}.
constexpr CallbackId kDriverLaunchEx[] = {652, 653};
constexpr CallbackId kDriverMultiDevice = 480;  // cuLaunchCooperativeKernelMultiDevice
constexpr CallbackId kDriverGraphLaunch[] = {514, 515};  // cuGraphLaunch[_ptsz]

// Runtime launches: cudaLaunch_v3020, cudaLaunch_ptsz, cudaLaunchKernel[_ptsz],
// cudaLaunchCooperativeKernel[_ptsz], cudaLaunchKernelExC[_ptsz], __cudaLaunchKernel[_ptsz] (13.0).
constexpr CallbackId kRuntimeKernelLaunch[] = {13, 213, 211, 214, 269, 270, 430, 431, 505, 506};
constexpr CallbackId kRuntimeMultiDevice = 272;  // cudaLaunchCooperativeKernelMultiDevice (gone in 13)
constexpr CallbackId kRuntimeGraphLaunch[] = {311, 312};  // cudaGraphLaunch[_ptsz]

// CUDA_LAUNCH_PARAMS: the function comes first; the struct is 9 words long on 64-bit Linux.
struct LaunchParamsHead {
  CUfunction function;
  unsigned int dims[7];
  void* hStream;
  void** kernelParams;
};
struct MultiDeviceParams {
  const LaunchParamsHead* launchParamsList;
  unsigned int numDevices;
  unsigned int flags;
};

}  // namespace kjt
