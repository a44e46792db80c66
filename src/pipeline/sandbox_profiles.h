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

// `inputs_dir` may be empty (OpenCL builds run the runner without inputs).
kjsandbox::Policy run_policy(const Config& cfg, const std::filesystem::path& job_dir,
                             const std::filesystem::path& inputs_dir, std::vector<std::string> argv,
                             std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile);

}  // namespace kj
