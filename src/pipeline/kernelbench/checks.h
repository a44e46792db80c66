// KernelBench-format jobs: the daemon's checks on what the candidate's harness reported, in the
// order they are applied after the outputs compared equal (design §5 steps 4, 6, 7): the
// harness's own guards (patched timers), input mutation, threads left running, audited timed
// calls, the daemon's clock over the timed loop, and device work outside the timed stream. Each
// returns a Finding; pipeline/verdict/verdict.cpp's final_verdict decides.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"
#include "pipeline/checks/compare.h"
#include "pipeline/run/steps.h"
#include "pipeline/timing/clock_reader.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// A comparison the trusted worker made (python/kjudge_worker/compare.py: the fields of
// TensorComparison), as the protobuf message; missing fields stay at their defaults.
kjudge::v1::TensorComparison comparison_from_json(const nlohmann::json& j);

struct KernelBenchFacts {
  const nlohmann::json* candidate = nullptr;       // the candidate role's report
  const nlohmann::json* oracle = nullptr;          // the worker's prepare report (sets, pool, audits)
  const nlohmann::json* worker = nullptr;          // the worker's results: comparisons, audits, flags
  const std::vector<ClockMark>* marks = nullptr;   // the daemon's clock on the candidate's loop
  double clean_wall_minus_event_ms = 0;            // clean process: host wall - event time, median
  Tolerance tol{};
  bool timed = false;
};

// The worker's channel refused requests (only code behind the harness's back makes them): Tamper
// evidence of a CHEAT.
std::optional<Finding> check_channel(const nlohmann::json& worker, kjudge::v1::Result& r);

// Before the comparison (Tamper findings): patched guards, an output that changed after its call
// returned or threads left running (deferred work: its late writes make any output meaningless), an
// output replayed from an earlier set (the worker's flag), outputs that are not plain tensors.
std::optional<Finding> check_before_compare(const KernelBenchFacts& f, kjudge::v1::Result& r);

// After a correct comparison (Integrity findings).
std::optional<Finding> check_after_compare(const KernelBenchFacts& f, kjudge::v1::Result& r);


}  // namespace kj
