// RAII owners for OpenCL objects: each releases its handle exactly once.
#pragma once

#include <CL/cl.h>

#include <memory>
#include <type_traits>

namespace kjudge::runner {

template <typename Handle, cl_int (*Release)(Handle)>
struct ClRelease {
  void operator()(Handle h) const noexcept { Release(h); }
};

template <typename Handle, cl_int (*Release)(Handle)>
using ClPtr = std::unique_ptr<std::remove_pointer_t<Handle>, ClRelease<Handle, Release>>;

using ClContext = ClPtr<cl_context, clReleaseContext>;
using ClQueue = ClPtr<cl_command_queue, clReleaseCommandQueue>;
using ClProgram = ClPtr<cl_program, clReleaseProgram>;
using ClKernel = ClPtr<cl_kernel, clReleaseKernel>;
using ClMem = ClPtr<cl_mem, clReleaseMemObject>;
using ClEvent = ClPtr<cl_event, clReleaseEvent>;

}  // namespace kjudge::runner
