#include "runner/cl_device.h"

#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runner/cl_errors.h"
#include "runner/error.h"

namespace kjudge::runner {

namespace {

std::vector<cl_platform_id> platforms() {
  cl_uint n = 0;
  cl_check(clGetPlatformIDs(0, nullptr, &n), "clGetPlatformIDs");
  std::vector<cl_platform_id> ids(n);
  cl_check(clGetPlatformIDs(n, ids.data(), nullptr), "clGetPlatformIDs");
  return ids;
}

// The first device of `type` on any platform, in platform order.
std::optional<ClDevice> first_device(const std::vector<cl_platform_id>& ids, cl_device_type type) {
  for (cl_platform_id p : ids) {
    cl_device_id d = nullptr;
    const cl_int rc = clGetDeviceIDs(p, type, 1, &d, nullptr);
    if (rc == CL_DEVICE_NOT_FOUND) continue;
    cl_check(rc, "clGetDeviceIDs");
    return ClDevice{p, d};
  }
  return std::nullopt;
}

template <typename Query, typename Object, typename Param>
std::string info_string(Query query, Object obj, Param param, std::string_view call) {
  std::size_t size = 0;
  cl_check(query(obj, param, 0, nullptr, &size), call);
  std::string s(size, '\0');
  cl_check(query(obj, param, size, s.data(), nullptr), call);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace

ClDevice select_device() {
  const char* env = std::getenv("KJUDGE_OPENCL_DEVICE_TYPE");
  const std::string_view want = env ? env : "";
  const auto ids = platforms();

  std::optional<ClDevice> d;
  if (want.empty()) {
    d = first_device(ids, CL_DEVICE_TYPE_GPU);
    if (!d) d = first_device(ids, CL_DEVICE_TYPE_ALL);
  } else if (want == "gpu") {
    d = first_device(ids, CL_DEVICE_TYPE_GPU);
  } else if (want == "cpu") {
    d = first_device(ids, CL_DEVICE_TYPE_CPU);
  } else if (want == "all") {
    d = first_device(ids, CL_DEVICE_TYPE_ALL);
  } else {
    throw RunnerError(fmt::format("KJUDGE_OPENCL_DEVICE_TYPE={}: expected gpu, cpu or all", want));
  }
  if (!d) {
    throw RunnerError(fmt::format("no OpenCL device of type '{}' on {} platform(s)",
                                  want.empty() ? "any" : want, ids.size()));
  }
  return *d;
}

void describe_device(const ClDevice& d, kjudge::v1::RunnerReport& report) {
  report.set_device_name(info_string(clGetDeviceInfo, d.device, CL_DEVICE_NAME, "clGetDeviceInfo"));
  report.set_driver_version(
      info_string(clGetDeviceInfo, d.device, CL_DRIVER_VERSION, "clGetDeviceInfo"));
  report.set_platform_version(
      info_string(clGetPlatformInfo, d.platform, CL_PLATFORM_VERSION, "clGetPlatformInfo"));
}

}  // namespace kjudge::runner
