// Baselines of KernelBench-format jobs (the reference eager and under torch.compile, timed in the
// oracle's clean process) cached per reference, sizes, precision, mode, timing rules and node:
// the thousands of candidates an RL step sends for one task time the reference once per node.
//
// The node (GPU model, driver, torch, CUDA, interpreter) is only known inside the oracle, so the
// daemon keeps the identity the last oracle reported (a file beside the entries) and asks the next
// oracle to skip timing only if it finds itself on that same node; one that does not times as usual
// and its figures are stored under its own identity.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kjudge/v1/job.pb.h"

namespace kj {

class KernelBenchBaselineCache {
 public:
  // timing: the oracle's timing rules; per-job secrets (perturb seed, audit positions) are ignored.
  KernelBenchBaselineCache(std::filesystem::path dir, const kjudge::v1::KernelBenchTask& task, bool compat,
                           const nlohmann::json& timing);

  // The identity the oracle must report for `cached()` to stand, or "" when nothing is cached.
  const std::string& expected_identity() const { return identity_; }
  // The entry for expected_identity(): {"baseline", "compiled_baseline"?, "wall_gap_ms",
  // "mark_overhead_ms"?}.
  const std::optional<nlohmann::json>& cached() const { return entry_; }
  // Stores an entry measured on the node `identity` (atomic rename; last writer wins).
  void store(const std::string& identity, const nlohmann::json& entry) const;

 private:
  std::string key_for(const std::string& identity) const;
  std::filesystem::path dir_;
  std::string material_;  // the job's part of the key
  std::string backend_;
  std::string identity_;
  std::optional<nlohmann::json> entry_;
};

}  // namespace kj
