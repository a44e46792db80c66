// Which OpenCL device the runner uses, and what it reports about it.
#pragma once

#include <CL/cl.h>

#include <string>

#include "kjudge/v1/runner.pb.h"

namespace kjudge::runner {

struct ClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;  // platform/device ids are not reference counted in 1.2
};

// KJUDGE_OPENCL_DEVICE_TYPE: "gpu" (first GPU), "cpu" (first CPU), "all" (first device of any
// type); unset or empty: the first GPU of any platform if there is one, else the first device.
ClDevice select_device();

// Fills device_name, platform_version and driver_version.
void describe_device(const ClDevice& d, kjudge::v1::RunnerReport& report);

}  // namespace kjudge::runner
