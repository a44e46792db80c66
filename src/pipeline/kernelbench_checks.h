// KernelBench-format jobs: the daemon's checks on what the candidate's harness reported, in the
// order they are applied after the outputs compared equal (design §5 steps 4, 6, 7): the
// harness's own guards (patched timers), input mutation, threads left running, audited timed
// calls, the daemon's clock over the timed loop, and device work outside the timed stream.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"
#include "pipeline/compare.h"
#include "pipeline/steps.h"
#include "pipeline/verdict.h"

namespace kj {

// The numbers in j[key] (a harness report's array); empty when absent.
std::vector<double> json_doubles(const nlohmann::json& j, const char* key);

// dtype names as the harness writes them ("float32", "bfloat16", ...); DTYPE_UNSPECIFIED if unknown.
kjudge::v1::DType dtype_from_torch_name(const std::string& name);

// Expected tensor (oracle's description + file) against the candidate's; problem in words on
// shape/dtype mismatch.
kjudge::v1::TensorComparison compare_described(const nlohmann::json& expected, const std::filesystem::path& expected_file,
                                               const nlohmann::json& actual, const std::filesystem::path& actual_file,
                                               const Tolerance& tol);

struct KernelBenchFacts {
  const nlohmann::json* candidate = nullptr;       // the candidate role's report
  const nlohmann::json* oracle = nullptr;          // the oracle role's report
  std::filesystem::path expected_dir, audit_dir;   // host paths
  const std::vector<ClockMark>* marks = nullptr;   // the daemon's clock on the candidate's loop
  double overhead_per_call_ms = 0;                 // clean process: outside - inside, per call
  double clean_wall_minus_event_ms = 0;            // clean process: host wall - event time, median
  Tolerance tol{};
  bool timed = false;
};

// Before the comparison: outputs that are not plain tensors, patched guards.
std::optional<Decision> check_before_compare(const KernelBenchFacts& f, kjudge::v1::Result& r);

// After a correct comparison and the legality verdict.
std::optional<Decision> check_after_compare(const KernelBenchFacts& f, kjudge::v1::Result& r);

// Span of the timed loop on the daemon's clock ('S' .. 'E', one 'T' per call); nullopt if the
// marks do not match `calls`.
std::optional<double> loop_span(const std::vector<ClockMark>& marks, std::size_t calls);

}  // namespace kj
