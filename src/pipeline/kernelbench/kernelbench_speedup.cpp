#include "pipeline/kernelbench/kernelbench_speedup.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pipeline/checks/engine_checks.h"
#include "pipeline/kernelbench/kernelbench_checks.h"
#include "pipeline/checks/stats.h"

namespace kj {
namespace v1 = kjudge::v1;
using nlohmann::json;

v1::TimingStats stats_of(const json& timing) {
  const std::vector<double> ms = json_doubles(timing, "trial_ms");
  v1::TimingStats s = timing_stats(ms, timing.value("method", ""));
  if (!ms.empty()) s.set_max_ms(*std::max_element(ms.begin(), ms.end()));
  if (timing.contains("kernelbench_stats")) {  // KernelBench's rounding (3 significant figures)
    const auto& k = timing["kernelbench_stats"];
    s.set_mean_ms(k.value("mean", 0.0));
    s.set_std_ms(k.value("std", 0.0));
    s.set_min_ms(k.value("min", 0.0));
    s.set_max_ms(k.value("max", 0.0));
  }
  // the loop's own word, as its figures are: a malformed count gives none, never an error
  if (const auto it = timing.find("trials_redone"); it != timing.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0)
    s.set_trials_redone(static_cast<std::uint32_t>(std::min<std::int64_t>(it->get<std::int64_t>(), 1 << 20)));
  if (const auto it = timing.find("host_wait_ms"); it != timing.end() && it->is_number() && it->get<double>() >= 0)
    s.set_host_wait_ms(it->get<double>());
  return s;
}

namespace {
double median_of(const std::vector<double>& xs) { return timing_stats(xs, "").median_ms(); }

// The candidate's per-call times on the daemon's clock, less the harness's overhead.
std::vector<double> trusted_calls(const TimedLoop& loop, double overhead_ms) {
  std::vector<double> out;
  for (double x : loop.call_ms) out.push_back(std::max(x - overhead_ms, 0.0));
  return out;
}

// The interval of both loops' sampling noise, widened by `shift` (a relative move between two
// loops of one kernel): a job's loops each sit at a moment of the device's state that the next
// job's do not share, so the sampling interval alone is narrower than the spread between jobs.
void set_interval(v1::Performance& perf, Interval base, Interval cand, double shift) {
  if (cand.low <= 0 || base.low <= 0) return;
  perf.set_speedup_ci_low(base.low / cand.high / (1 + shift));
  perf.set_speedup_ci_high(base.high / cand.low * (1 + shift));
}

// The relative distance between the reference's two loops of this job (adjacent and prepared or
// cached): 0 without a second loop.
double loop_shift(const v1::TimingStats& used, const nlohmann::json* other, bool compat) {
  if (other == nullptr) return 0;
  const v1::TimingStats o = stats_of(*other);
  const double a = compat ? used.mean_ms() : used.median_ms(), b = compat ? o.mean_ms() : o.median_ms();
  return a > 0 && b > 0 ? std::max(a, b) / std::min(a, b) - 1 : 0;
}

// The widening: this job's two loops' distance, or the device's recent p75 when larger (which
// it also reports as device_loop_shift).
double interval_shift(v1::Performance& perf, const SpeedupFacts& f) {
  perf.set_device_loop_shift(f.device_loop_shift);
  return std::max(perf.baseline_loop_shift(), f.device_loop_shift);
}
}  // namespace

std::optional<double> harness_overhead_ms(const json& timing, const TimedLoop& loop) {
  const auto events = json_doubles(timing, "trial_ms");
  if (loop.call_ms.empty() || loop.call_ms.size() != events.size()) return std::nullopt;
  return std::max(0.0, median_of(loop.call_ms) - median_of(events));
}

void note_loop_flags(const json& timing, v1::Result& r) {
  for (const auto& flag : timing.value("flags", json::array()))
    if (flag.is_string()) add_flag(r, flag.get<std::string>());
}

namespace {
void set_speedup_figures(v1::Performance& perf, const SpeedupFacts& f) {
  *perf.mutable_candidate() = stats_of(*f.candidate);
  *perf.mutable_baseline() = stats_of(*f.baseline);
  if (f.compiled_baseline) *perf.mutable_compiled_baseline() = stats_of(*f.compiled_baseline);
  perf.set_speedup_source("events");
  std::vector<double> cand = json_doubles(*f.candidate, "trial_ms");
  const std::vector<double> base = json_doubles(*f.baseline, "trial_ms");
  if (f.compat) {  // KernelBench's loop and figures: means of event times
    if (perf.candidate().mean_ms() <= 0) return;
    perf.set_speedup(perf.baseline().mean_ms() / perf.candidate().mean_ms());
    if (perf.has_compiled_baseline()) perf.set_speedup_vs_compiled(perf.compiled_baseline().mean_ms() / perf.candidate().mean_ms());
    perf.set_baseline_loop_shift(loop_shift(perf.baseline(), f.other_baseline, true));
    set_interval(perf, mean_interval(base), mean_interval(cand), interval_shift(perf, f));
    return;
  }
  double cand_ms = perf.candidate().median_ms();
  if (f.candidate_loop && f.harness_overhead_ms && f.candidate_loop->call_ms.size() == cand.size()) {
    auto trusted = trusted_calls(*f.candidate_loop, *f.harness_overhead_ms);
    perf.set_trusted_call_ms(median_of(trusted));
    if (perf.trusted_call_ms() > cand_ms * kTrustedSlackRatio + kTrustedSlackMs) {
      cand_ms = perf.trusted_call_ms();
      cand = std::move(trusted);
      perf.set_speedup_source("trusted_clock");
    }
  }
  if (cand_ms <= 0) return;
  perf.set_speedup(perf.baseline().median_ms() / cand_ms);
  if (perf.has_compiled_baseline()) perf.set_speedup_vs_compiled(perf.compiled_baseline().median_ms() / cand_ms);
  perf.set_baseline_loop_shift(loop_shift(perf.baseline(), f.other_baseline, false));
  set_interval(perf, median_interval(base), median_interval(cand), interval_shift(perf, f));
}
}  // namespace

// KernelBench's excessive_speedup_threshold: its evaluator marks a faster result for a second look
constexpr double kExcessiveSpeedup = 10.0;

void set_speedup(v1::Performance& perf, const SpeedupFacts& f) {
  set_speedup_figures(perf, f);
  perf.set_excessive_speedup(perf.speedup() > kExcessiveSpeedup);
}

}  // namespace kj
