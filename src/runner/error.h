// The one error type of the runner: anything that ends a request with ok=false. Its message goes
// verbatim into RunnerReport.error, so it names what failed (the API call and its code).
#pragma once

#include <stdexcept>

namespace kjudge::runner {

class RunnerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The device could not be set up (driver init, context) before any job code was loaded: the
// node's fault, reported as RunnerReport.device_unavailable.
class DeviceUnavailable : public RunnerError {
 public:
  using RunnerError::RunnerError;
};

}  // namespace kjudge::runner
