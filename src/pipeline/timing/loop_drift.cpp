#include "pipeline/timing/loop_drift.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace kj {

LoopDrift& LoopDrift::of_device(int gpu) {
  static std::mutex mu;
  static std::map<int, LoopDrift> by_device;
  std::lock_guard lock(mu);
  return by_device[gpu];
}

void LoopDrift::record(double shift) {
  if (!std::isfinite(shift) || shift < 0) return;
  std::lock_guard lock(mu_);
  shifts_.push_back(shift);
  if (shifts_.size() > kWindow) shifts_.pop_front();
}

double LoopDrift::p75() const {
  std::vector<double> xs;
  {
    std::lock_guard lock(mu_);
    if (shifts_.size() < kMinSamples) return 0;
    xs.assign(shifts_.begin(), shifts_.end());
  }
  const auto k = static_cast<std::size_t>(std::ceil(0.75 * static_cast<double>(xs.size()))) - 1;
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(k), xs.end());
  return xs[k];
}

}  // namespace kj
