// Summary statistics of timed trials.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/runner.pb.h"

namespace kj {

kjudge::v1::TimingStats timing_stats(std::span<const double> trial_ms, const std::string& method);

struct Interval {
  double low = 0, high = 0;
};
// 95% distribution-free interval of the median (order statistics); {0, 0} under 5 values.
Interval median_interval(std::span<const double> xs);
// The median; 0 of no values.
double median(std::vector<double> v);
// 95% interval of the mean (normal approximation); {0, 0} under 2 values.
Interval mean_interval(std::span<const double> xs);
// A native loop's own precision: the half-width of its median's 95% interval relative to the
// median (runner/engine_math.h's median_rel_ci, which the runner stops on); 0 under 5 calls.
double median_rel_ci_of(const kjudge::v1::RunnerReport& report);

}  // namespace kj
