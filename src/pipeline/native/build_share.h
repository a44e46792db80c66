// Native builds (a candidate's or reference's .so or cubin, and the compiler's log) shared by the
// nodes of a cluster through the build store (pipeline/build/store.h), as KernelBench builds are:
// a node compiles what no node has built or is building, publishes it, and every other node takes
// it. A candidate's build failure is shared too (never ours: INFRA_ERROR, CANCELLED, EXPIRED).
#pragma once

#include <optional>
#include <string>

#include "common/config.h"
#include "pipeline/build/store.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// The store's key: the node-local build key (source, argv, arch), the party (a failure is blamed on
// it) and the toolchain identity (nodes with other compilers never share).
std::string native_shared_key(const std::string& local_key, const std::string& party, const Config& cfg);

SharedBuild native_shared_success(const std::string& key, std::string artifact_bytes, const std::string& log);
std::optional<SharedBuild> native_shared_failure(const std::string& key, const Decision& d, const std::string& log);

// A fetched build: its failure (and log), or its artifact's bytes (and log).
struct FetchedNativeBuild {
  std::optional<Decision> failure;
  std::string artifact, log;
};
std::optional<FetchedNativeBuild> fetched_native_build(const SharedBuild& b);

}  // namespace kj
