// The sandbox policies of the pipeline's two slot kinds, built from the daemon's config:
// compile slots (toolchain, no GPU, no network) and run slots (the runner, the inputs read-only,
// and the language's device profile). cgroup limits and the seccomp mode come from [sandbox].
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/config.h"
#include "kjsandbox/policy.h"

namespace kj {

inline constexpr const char* kRunnerInSandbox = "/opt/kjudge/bin/kjudge-runner";

kjsandbox::Policy compile_policy(const Config& cfg, const std::filesystem::path& job_dir,
                                 std::vector<std::string> argv, std::uint32_t wall_ms);

// Device minor of the GPU this node's run slots use: sandbox.gpu_index, else $KJUDGE_GPU_INDEX,
// else the lowest /dev/nvidiaN present, else 0.
int gpu_index(const Config& cfg);

// Every /dev/nvidiaN of this host, by minor.
std::vector<int> nvidia_device_minors();

// The GPUs one kjudged judges on: sandbox.gpus; "all": every /dev/nvidiaN (none: gpu_index's);
// unset: the one gpu_index names (the one-daemon-per-GPU mode). A job runs with its config's
// gpu_index set to the GPU it was placed on, so everything below the daemon sees one GPU.
std::vector<int> node_gpus(const Config& cfg);

// `inputs_dir` may be empty (OpenCL builds run the runner without inputs).
kjsandbox::Policy run_policy(const Config& cfg, const std::filesystem::path& job_dir,
                             const std::filesystem::path& inputs_dir, std::vector<std::string> argv,
                             std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile);

}  // namespace kj
