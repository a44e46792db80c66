#include "pipeline/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace kj {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  // linear interpolation between closest ranks (numpy's default)
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

kjudge::v1::TimingStats timing_stats(std::span<const double> trial_ms, const std::string& method) {
  kjudge::v1::TimingStats s;
  s.set_method(method);
  s.set_trials(static_cast<std::uint32_t>(trial_ms.size()));
  if (trial_ms.empty()) return s;
  std::vector<double> v(trial_ms.begin(), trial_ms.end());
  std::sort(v.begin(), v.end());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  s.set_median_ms(quantile(v, 0.5));
  s.set_mean_ms(mean);
  s.set_std_ms(v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0);
  s.set_min_ms(v.front());
  s.set_p90_ms(quantile(v, 0.9));
  return s;
}

}  // namespace kj
