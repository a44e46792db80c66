// Where the CUDA toolkit's CUPTI headers are on the include path, checks cupti_abi.h against them
// at compile time; elsewhere the recorder builds from cupti_abi.h alone.
#if __has_include(<cupti_callbacks.h>) && __has_include(<generated_cuda_meta.h>)
#include <cstddef>

// generated_cuda_meta.h names the _v1 types cuda.h declares only for its own build
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>
#include <generated_cuda_meta.h>

#include "kernel_trace/cupti_abi.h"

namespace kjt::check {
static_assert(sizeof(CallbackData) == sizeof(CUpti_CallbackData));
static_assert(offsetof(CallbackData, functionParams) == offsetof(CUpti_CallbackData, functionParams));
static_assert(offsetof(CallbackData, symbolName) == offsetof(CUpti_CallbackData, symbolName));
static_assert(offsetof(CallbackData, correlationData) == offsetof(CUpti_CallbackData, correlationData));
static_assert(int{kDomainDriver} == int{CUPTI_CB_DOMAIN_DRIVER_API} && int{kDomainRuntime} == int{CUPTI_CB_DOMAIN_RUNTIME_API});
static_assert(int{kApiEnter} == int{CUPTI_API_ENTER} && int{kApiExit} == int{CUPTI_API_EXIT});
static_assert(kDriverFirstArgFunction[0] == CUPTI_DRIVER_TRACE_CBID_cuLaunch);
static_assert(kDriverFirstArgFunction[1] == CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid);
static_assert(kDriverFirstArgFunction[2] == CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync);
static_assert(kDriverFirstArgFunction[3] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
static_assert(kDriverFirstArgFunction[4] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
static_assert(kDriverFirstArgFunction[5] == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
static_assert(kDriverFirstArgFunction[6] == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz);
static_assert(kDriverLaunchEx[0] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
static_assert(kDriverLaunchEx[1] == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
static_assert(kDriverMultiDevice == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice);
static_assert(kDriverGraphLaunch[0] == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
static_assert(kDriverGraphLaunch[1] == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
static_assert(offsetof(cuLaunchKernel_params, f) == 0 && offsetof(cuLaunchGridAsync_params, f) == 0);
static_assert(offsetof(cuLaunchCooperativeKernel_params, f) == 0 && offsetof(cuLaunch_params, f) == 0);
static_assert(offsetof(cuLaunchKernelEx_params, f) == sizeof(void*));
static_assert(sizeof(LaunchParamsHead) == sizeof(CUDA_LAUNCH_PARAMS));
static_assert(kRuntimeKernelLaunch[0] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020);
static_assert(kRuntimeKernelLaunch[1] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000);
static_assert(kRuntimeKernelLaunch[2] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
static_assert(kRuntimeKernelLaunch[3] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000);
static_assert(kRuntimeKernelLaunch[4] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000);
static_assert(kRuntimeKernelLaunch[5] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000);
static_assert(kRuntimeKernelLaunch[6] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060);
static_assert(kRuntimeKernelLaunch[7] == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060);
static_assert(kRuntimeMultiDevice == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000);
static_assert(kRuntimeGraphLaunch[0] == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
static_assert(kRuntimeGraphLaunch[1] == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000);
#if CUPTI_API_VERSION >= 130000
static_assert(kRuntimeKernelLaunch[8] == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
static_assert(kRuntimeKernelLaunch[9] == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000);
#endif
}  // namespace kjt::check
#endif
