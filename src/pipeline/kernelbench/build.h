// KernelBench-format jobs, stages 1-2: the static policy and the build, in the compile sandbox
// (no GPU). Extensions are content-addressed in <cache>/torch-ext/<tenant+source>/<key> (the
// harness's key, inside a folder per tenant and candidate source: the key comes from inside the
// sandbox, so it cannot decide what other candidates load); the precompiled torch/extension.h in <cache>/torch-pch is made once per
// node and variant, concurrent first users waiting on one flock for one build.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/build/store.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/run/judge_context.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// <kernelbench.cache_dir or state_dir/cache>: what every job of the node shares.
std::filesystem::path kernelbench_cache_root(const Config& cfg);

// A directory sandboxes may enter by exact name but not list (0711), created if missing.
std::filesystem::path private_dir(const std::filesystem::path& p);

// The harness's own phase times, prefixed by its role ("build.import").
void add_phases(kjudge::v1::Result& r, const std::string& role, const nlohmann::json& report);

// The extension cache's folder for a job: one per tenant and candidate source (or completion).
// An extension's key is computed inside the build sandbox, so a candidate could publish a binary
// under the key another candidate's call will compute; in its own folder it only reaches runs of
// the very same source by the same tenant.
std::filesystem::path kernelbench_ext_cache_dir(const kjudge::v1::Job& job, const Config& cfg);

struct KernelBenchBuildInput {
  std::string backend;                    // "cuda", "cpu", "triton", ...
  std::filesystem::path build_dir;        // the job's build party dir (candidate.py, reference.py)
  bool completion = false;                // build_dir holds completion.md, not candidate.py
  nlohmann::json size_overrides = nlohmann::json::object();
  std::uint32_t compile_ms = 0;
  std::uint64_t output_bytes = 0;
  // The cluster's shared build store (kjudged with [build] shared, or a build node); nullptr: none.
  BuildStore* store = nullptr;
  bool leased = false;  // the caller holds the build's lease already (a build node): build and publish
};

struct KernelBenchBuild {
  std::optional<Decision> failure;          // the job's verdict when the build stage decided it
  std::string detail;                       // compile log worth showing in feedback
  nlohmann::json manifest = nlohmann::json::array();  // for the candidate: key, name, /ext/<key>/<so>
  std::vector<kjsandbox::BindMount> binds;  // each extension's cache dir, read-only at /ext/<key>
  std::string arch;                         // TORCH_CUDA_ARCH_LIST the extensions were built for
};

// "cuda", "triton", "cpu", "hip", "musa".
const char* kernelbench_backend_name(kjudge::v1::Backend b);

// The candidate as submitted, decided once for the build, the prebuild and the cache keys: an
// LLM's raw completion (the harness extracts the code from completion.md) or a ModelNew file.
struct CandidateSource {
  bool completion = false;
  const std::string& text;
  const char* file_name;  // in the build party dir: "completion.md" or "candidate.py"
};
CandidateSource candidate_source(const kjudge::v1::KernelBenchTask& task);

// TORCH_CUDA_ARCH_LIST of this node's CUDA builds: the config's, else its GPU's compute capability
// (nvidia-smi, asked once); empty with neither. One architecture: the harness builds that gencode
// only. Judging nodes publish it in their heartbeat; build nodes without a GPU adopt it.
std::string kernelbench_cuda_arch_list(const Config& cfg);

// Whether the job's build (its backend) depends on the CUDA architecture; cpu and triton do not.
bool kernelbench_build_needs_cuda_arch(const kjudge::v1::Job& job);

// The job's build's content key in the shared build store: the build memo's key (sources, sizes,
// policy overrides, backend, arch, tenant) with the node's toolchain identity.
std::string kernelbench_build_key(const kjudge::v1::Job& job, const Config& cfg);

// Runs the build role and publishes its extensions into the cache; fills r's compile report,
// static-policy flags and build phases.
KernelBenchBuild build_kernelbench(const kjudge::v1::Job& job, const Config& cfg, const KernelBenchBuildInput& in,
                                   kjudge::v1::Result& r);

}  // namespace kj
