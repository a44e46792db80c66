// Host wall-clock timing for backends without device events (the C++ backend).
#pragma once

#include <chrono>

namespace kjudge::runner {

inline constexpr const char* kSteadyClockMethod = "steady_clock";

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}

  double elapsed_ms() const {
    const auto d = std::chrono::steady_clock::now() - start_;
    return std::chrono::duration<double, std::milli>(d).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kjudge::runner
