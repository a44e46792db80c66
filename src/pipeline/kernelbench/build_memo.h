// The build stage's outcome remembered per job inputs: a job whose candidate (or completion),
// reference, size and policy overrides, backend and architecture were built before on this node
// skips the build sandbox (and its torch import) and gets the same extensions from the cache.
// Successful builds are remembered with the torch install they were made with (the stamp of
// torch's own file): a different torch is a miss. The candidate role still loads each extension
// by the key of its own load_inline call, so a replay can never hand it another binary. A build
// that failed by the candidate's own fault, as the harness decided it (a static-policy verdict, a
// compile error), is remembered with what it depended on beyond its inputs (the toolchain, the
// node's build settings); a build the sandbox killed (its wall time depends on the node's load) or
// our own failure never is.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kj {

struct BuildMemoInputs {
  std::string tenant;            // builds are never shared across tenants (their extension cache is not)
  std::string candidate;         // candidate.py or completion.md text
  bool completion = false;
  std::string reference;
  nlohmann::json size_overrides;
  nlohmann::json policy_overrides;
  std::string backend, arch;
  std::string python, harness_dir;
};

class BuildMemo {
 public:
  BuildMemo(const std::filesystem::path& dir, const BuildMemoInputs& in);
  // {static_policy, extensions, candidate_py} of an earlier successful build, if its torch is still there.
  std::optional<nlohmann::json> lookup() const;
  // The build report's facts; torch = {"file", ...} as the harness reported it.
  void store(const nlohmann::json& report, const std::string& candidate_py) const;
  // An entry another node made (a shared build): stamped with this node's torch file, then stored.
  void adopt(const nlohmann::json& entry) const;
  // The candidate's build failure (failed = true and what replays it), under the conditions it failed in.
  void store_failure(nlohmann::json failure, const std::string& conditions) const;
  // An earlier failure, if made under what `conditions()` returns (asked only when there is one).
  std::optional<nlohmann::json> lookup_failure(const std::function<std::string()>& conditions) const;
  // The inputs' key (hex): the shared build store's content key adds the toolchain to it.
  const std::string& key() const { return key_; }

 private:
  void write(const nlohmann::json& entry) const;
  std::optional<nlohmann::json> read() const;
  std::string key_;
  std::filesystem::path file_;
};

}  // namespace kj
