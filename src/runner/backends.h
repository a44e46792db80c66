// One entry point per (language, mode). Each fills the report (build log, device, timings) and
// throws RunnerError on failure; the caller turns that into ok=false.
#pragma once

#include "kjudge/v1/runner.pb.h"

namespace kjudge::runner {

// C++: dlopen the shared object, call the extern "C" entry through libffi.
void run_cpp(const kjudge::v1::RunnerRequest& request, kjudge::v1::RunnerReport& report);

// OpenCL: compile source_path, check the entry kernel, write the program binary to artifact_path.
void build_opencl(const kjudge::v1::RunnerRequest& request, kjudge::v1::RunnerReport& report);

// OpenCL: load the program binary, run the entry kernel over launch.global_size.
void run_opencl(const kjudge::v1::RunnerRequest& request, kjudge::v1::RunnerReport& report);

// CUDA: load the fatbin (kernel mode) or shared object (host-launch mode) and run it through the
// driver API, which is dlopen'ed (libcuda.so.1) so the runner works without a driver installed.
void run_cuda(const kjudge::v1::RunnerRequest& request, kjudge::v1::RunnerReport& report);

}  // namespace kjudge::runner
