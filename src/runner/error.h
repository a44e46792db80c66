// The one error type of the runner: anything that ends a request with ok=false. Its message goes
// verbatim into RunnerReport.error, so it names what failed (the API call and its code).
#pragma once

#include <stdexcept>

namespace kjudge::runner {

class RunnerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kjudge::runner
