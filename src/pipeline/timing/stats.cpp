#include "pipeline/timing/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "runner/engine_math.h"

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

Interval median_interval(std::span<const double> xs) {
  const std::size_t n = xs.size();
  if (n < 5) return {};
  std::vector<double> v(xs.begin(), xs.end());
  std::sort(v.begin(), v.end());
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2;
  const double mid = static_cast<double>(n) / 2;
  const auto lo = static_cast<std::size_t>(std::max(0.0, std::floor(mid - half)));
  const auto hi = std::min(n - 1, static_cast<std::size_t>(std::ceil(mid + half)));
  return {v[lo], v[hi]};
}

Interval mean_interval(std::span<const double> xs) {
  const std::size_t n = xs.size();
  if (n < 2) return {};
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  const double half = 1.96 * std::sqrt(var / static_cast<double>(n - 1) / static_cast<double>(n));
  return {mean - half, mean + half};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double median_rel_ci_of(const kjudge::v1::RunnerReport& report) {
  const double ci = kjudge::median_rel_ci(std::vector<double>(report.trial_ms().begin(), report.trial_ms().end()));
  return std::isfinite(ci) ? ci : 0.0;
}

}  // namespace kj
