// kjudge-canary's exit codes and result names: the contract between the canary binary and the
// daemon's GPU health check (src/daemon/gpu_health.cpp), which reads them from the sandbox report.
#pragma once

namespace kjudge::canary {

enum Exit : int {
  kHealthy = 0,
  kGpuError = 1,     // a CUDA call failed (the JSON line names the step and the CUDA error)
  kWrongResult = 2,  // everything succeeded but the data came back wrong
  kTimeout = 3,      // the GPU did not finish within the deadline: wedged or hung
  kNoDriver = 4,     // libcuda cannot be loaded or initialised (no NVIDIA driver, the stub library)
  kNoDevice = 5,     // the driver works but shows no device (or not the one asked for)
  kUsage = 64,       // bad command line (EX_USAGE)
};

// The "result" field of the JSON line, by exit code.
inline const char* result_name(int code) {
  switch (code) {
    case kHealthy: return "healthy";
    case kGpuError: return "gpu_error";
    case kWrongResult: return "wrong_result";
    case kTimeout: return "timeout";
    case kNoDriver: return "no_driver";
    case kNoDevice: return "no_device";
    case kUsage: return "usage";
    default: return "unknown";
  }
}

}  // namespace kjudge::canary
