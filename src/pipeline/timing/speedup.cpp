// The steps of speedup.h, in the order they run: the loops' figures, the harness's overhead, the
// trusted figure against the events, the speedup, its interval, and the whole for a KernelBench job.
#include "pipeline/timing/speedup.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "pipeline/run/result_flags.h"
#include "pipeline/timing/stats.h"
#include "runner/engine_math.h"

namespace kj {
namespace v1 = kjudge::v1;
using nlohmann::json;

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

std::optional<double> prepared_overhead_ms(const json& timing, const std::vector<ClockMark>& oracle_marks) {
  const auto loops = timed_loops(oracle_marks);
  if (loops.empty()) return std::nullopt;
  return harness_overhead_ms(timing, loops.front());
}

namespace {
// The SM clock (NVML, the trusted worker's reading) as each timed loop began: 0 where not read.
void set_sm_clocks(v1::Performance& perf, const json& seen, const json& baseline_loop) {
  const auto first = [](const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_number() ? (*it)[0].get<double>() : 0.0;
  };
  perf.set_candidate_sm_clock_mhz(first(seen, "candidate_sm_clock_mhz"));
  perf.set_baseline_sm_clock_mhz(first(baseline_loop, "sm_clock_mhz"));
}

// The candidate's loop alone: its figures, why it stopped, and its own precision (the relative
// interval of its median, as native jobs report it).
void set_candidate_loop(v1::Performance& perf, const json& cand_timing) {
  *perf.mutable_candidate() = stats_of(cand_timing);
  perf.set_stop_reason(cand_timing.value("stop_reason", ""));
  if (const double ci = kjudge::median_rel_ci(cand_timing.value("trial_ms", std::vector<double>{})); std::isfinite(ci))
    perf.set_median_rel_ci(ci);
}

// Which reference loop the speedup divides by, and the overhead that goes with it: the adjacent
// loop's from the worker's last loop on the daemon's clock, the prepared loop's as it was stored.
SpeedupFacts facts_of(const KernelBenchLoops& l, const std::vector<TimedLoop>& cand_loops,
                      const std::vector<TimedLoop>& ref_loops) {
  const json& prepared = *l.prepared;
  const bool adjacent = l.seen->contains("adjacent_baseline");
  SpeedupFacts f;
  f.candidate = l.candidate;
  f.baseline = adjacent ? &(*l.seen)["adjacent_baseline"] : &prepared["baseline"];
  if (prepared.contains("compiled_baseline")) f.compiled_baseline = &prepared["compiled_baseline"];
  if (adjacent && prepared.contains("baseline")) f.other_baseline = &prepared["baseline"];
  if (!cand_loops.empty()) f.candidate_loop = &cand_loops.front();
  if (adjacent && !ref_loops.empty())
    f.harness_overhead_ms = harness_overhead_ms(*f.baseline, ref_loops.back());
  else if (!adjacent && prepared.contains("mark_overhead_ms"))
    f.harness_overhead_ms = prepared.value("mark_overhead_ms", 0.0);
  f.compat = l.compat;
  return f;
}
}  // namespace

void make_kernelbench_speedup(v1::Result& r, const KernelBenchLoops& l, LoopDrift& drift) {
  const json& seen = *l.seen;
  note_loop_flags(*l.candidate, r);
  if (seen.contains("adjacent_baseline")) note_loop_flags(seen["adjacent_baseline"], r);
  v1::Performance& perf = *r.mutable_performance();
  set_candidate_loop(perf, *l.candidate);
  const bool adjacent = seen.contains("adjacent_baseline");
  if (adjacent || l.prepared->contains("baseline")) {
    const auto cand_loops = timed_loops(*l.candidate_marks), ref_loops = timed_loops(*l.worker_marks);
    SpeedupFacts f = facts_of(l, cand_loops, ref_loops);
    f.device_loop_shift = drift.p75();
    set_speedup(perf, f);
    if (f.other_baseline) drift.record(perf.baseline_loop_shift());
    set_sm_clocks(perf, seen, *f.baseline);
    perf.set_baseline_adjacent(adjacent);
    if (adjacent) perf.set_baseline_cached(false);
  }
  // the daemon's clock overruled the candidate's events: said in the flags as well as the source
  if (perf.speedup_source() == "trusted_clock") add_flag(r, "outside_clock_disagrees");
}

}  // namespace kj
