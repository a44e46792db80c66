// The speedup of a KernelBench-format job: which figures decide it, and their spread
// (docs/timing.md). The candidate's in-process CUDA events are believed only while the daemon's
// clock confirms them: each timed call is bracketed by kernel-stamped marks, and the harness's own
// overhead around a call is measured on the reference's loop (a process that runs no candidate
// code). A candidate whose events claim less than its calls took on the daemon's clock is timed by
// the daemon's clock instead.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "kjudge/v1/result.pb.h"
#include "pipeline/checks/loop_marks.h"

namespace kj {

// Events may undercount a call by this much before the daemon's clock replaces them: the marks'
// own jitter on a loaded node, and the host work between a call's marks, which runs at the speed
// of the CPU the candidate's process landed on (an honest 0.068 ms kernel's daemon-clock figure
// was 23 us under to 38 us over its events across 11 processes on one H100 node, 2026-11-28).
inline constexpr double kTrustedSlackRatio = 1.10;
inline constexpr double kTrustedSlackMs = 0.04;

struct SpeedupFacts {
  const nlohmann::json* candidate = nullptr;           // the candidate's loop (timing.py's report)
  const nlohmann::json* baseline = nullptr;            // the reference's eager loop
  const nlohmann::json* compiled_baseline = nullptr;   // torch.compile's, if any
  // the reference's other loop of this job (prepared or cached) when `baseline` is the adjacent
  // one: how far two loops of one kernel on this node moved apart widens the interval
  const nlohmann::json* other_baseline = nullptr;
  // the same distance over this device's recent jobs (LoopDrift::p75): widens it when larger
  double device_loop_shift = 0;
  const TimedLoop* candidate_loop = nullptr;           // the candidate's loop on the daemon's clock
  std::optional<double> harness_overhead_ms;           // per call, from the reference's loop
  bool compat = false;                                  // KernelBench's figures: means, events only
};

kjudge::v1::TimingStats stats_of(const nlohmann::json& timing);

// The harness's per-call overhead on the daemon's clock: median(T - B) - median(events) of a
// trusted loop; nullopt without a complete bracketing of its calls.
std::optional<double> harness_overhead_ms(const nlohmann::json& timing, const TimedLoop& loop);

// A timed loop's own notes (`timing.flags`: a device where the launch cover or the persisting-L2
// reset did not load, docs/timing.md) into the result's flags, so that a figure taken without
// them says so.
void note_loop_flags(const nlohmann::json& timing, kjudge::v1::Result& r);

// Fills candidate, baseline and compiled_baseline stats, speedup(s), the 95% interval,
// trusted_call_ms and speedup_source; excessive_speedup beyond KernelBench's 10x.
void set_speedup(kjudge::v1::Performance& perf, const SpeedupFacts& f);

}  // namespace kj
