// Summary statistics of timed trials.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kjudge/v1/result.pb.h"

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

}  // namespace kj
