// KernelBench builds to and from the shared build store (pipeline/build/store.h): what a finished
// build leaves for other nodes, and how a node installs one it fetched into its own caches.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"
#include "pipeline/build/store.h"
#include "pipeline/kernelbench/build_memo.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// A successful build: its memo entry and each extension's binary from the node's extension cache.
// nullopt when a binary is missing (nothing to share).
std::optional<SharedBuild> shared_success(const std::string& key, const nlohmann::json& memo_entry,
                                          const std::filesystem::path& ext_cache);

// The candidate's build failure, when it is the candidate's (not INFRA_ERROR, CANCELLED, EXPIRED).
std::optional<SharedBuild> shared_failure(const std::string& key, const Decision& d, const std::string& detail,
                                          const kjudge::v1::Result& r);

// Writes a fetched success's binaries into the extension cache (names checked: "<32 hex>/<file>")
// and adopts its memo entry. False: the artifact does not fit this node (its torch, a bad name).
bool install_shared(const SharedBuild& b, const std::filesystem::path& ext_cache, const BuildMemo& memo);

// A fetched failure: its build report merged into r; the decision it carried.
Decision replay_failure(const SharedBuild& b, kjudge::v1::Result& r, std::string& detail);

// A failure as the node's build memo keeps it (failed = true; its report in hex), and back.
nlohmann::json failure_entry(const SharedBuild& b);
SharedBuild failure_from_entry(const nlohmann::json& entry);

}  // namespace kj
