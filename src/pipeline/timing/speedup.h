// How a speedup is made, end to end (docs/timing.md tells why each step is so). For a
// KernelBench-format job:
//   1. measured: python/kjudge_protocol/timing.py times the candidate's loop in its harness and the
//      reference's beside it in the trusted worker, and sends each call's B and T marks to the
//      daemon's socket;
//   2. read: clock_reader.h stamps every mark on the daemon's clock; loop_marks.h cuts them into
//      timed loops (T - B per call); loop_report.h reads each loop's own report;
//   3. made: make_kernelbench_speedup (below) measures the harness's overhead on the reference's
//      loop, takes the candidate's events or, where they claim less than the daemon saw, its
//      trusted figure, divides, and widens stats.h's interval by the loops' shift and this
//      device's recent drift (loop_drift.h);
//   4. reported: the Result's Performance (speedup, interval, source), which
//      pipeline/verdict/reward.cpp turns into the reward.
// The pipeline that calls it (pipeline/kernelbench/pipeline.cpp, record_speedup) only
// hands over what it holds. The candidate's in-process CUDA events are believed only while the
// daemon's clock confirms them: the harness's own overhead around a call is measured on the
// reference's loop (a process that runs no candidate code).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "kjudge/v1/result.pb.h"
#include "pipeline/timing/loop_drift.h"
#include "pipeline/timing/loop_marks.h"
#include "pipeline/timing/loop_report.h"

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

// The harness's overhead on the prepared reference loop (the first loop on the worker's clock
// while it made the sets): kept with the baseline (mark_overhead_ms) for a job that has no
// adjacent loop, the cached baseline's included.
std::optional<double> prepared_overhead_ms(const nlohmann::json& timing, const std::vector<ClockMark>& oracle_marks);

// What a KernelBench job holds of its timed loops once they ran.
struct KernelBenchLoops {
  const nlohmann::json* candidate = nullptr;  // the candidate's loop report (its harness's "timing")
  // the prepared or cached reference: "baseline", "compiled_baseline", "mark_overhead_ms"
  const nlohmann::json* prepared = nullptr;
  // the worker's results: the reference's loop beside the candidate's ("adjacent_baseline"), the
  // SM clock as the candidate's loop began
  const nlohmann::json* seen = nullptr;
  const std::vector<ClockMark>* candidate_marks = nullptr;  // the daemon's clock on the candidate's loop
  const std::vector<ClockMark>* worker_marks = nullptr;     // ... and on the worker's loops
  bool compat = false;
};

// Steps 2 to 4 above: the loops' own notes into the flags, the candidate's figures, then the
// speedup against the reference's loop beside the candidate's when the worker timed one (same
// lock hold, same input buffers), else against the prepared or cached baseline; records this
// job's loop shift in the device's drift.
void make_kernelbench_speedup(kjudge::v1::Result& r, const KernelBenchLoops& loops, LoopDrift& drift);

}  // namespace kj
