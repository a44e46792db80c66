// OpenCL error codes by name, and the check every CL call goes through.
#pragma once

#include <CL/cl.h>

#include <string>
#include <string_view>

namespace kjudge::runner {

// "CL_INVALID_KERNEL_ARGS"; unknown codes (vendor extensions) as "CL_ERROR(-9999)".
std::string cl_error_name(cl_int code);

// Throws RunnerError("<call> failed: <code name>") unless code is CL_SUCCESS.
void cl_check(cl_int code, std::string_view call);

}  // namespace kjudge::runner
