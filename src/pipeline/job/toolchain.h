// Toolchain profiles as data: how a language is built and which extra flags a job may add.
// A new language or vendor is a new table entry, not new pipeline code.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"

namespace kj {

struct Toolchain {
  kjudge::v1::Language language;
  std::string source_name;    // file the candidate is written to inside /job
  std::string artifact_name;  // what the build produces inside /job
  // Build command inside the sandbox. Empty = the runner builds it (OpenCL: clBuildProgram).
  std::vector<std::string> compile_argv;
  std::vector<std::string> allowed_flag_patterns;  // full-match regexes for job.compile_flags
  std::string gpu_profile;                         // passthrough profile for run slots ("" = none)
  // CUDA host-launch mode (no launch.grid): build a shared object instead. Empty = no such mode.
  std::vector<std::string> host_launch_argv;
  std::string host_launch_artifact;

  // The argv for this task, "{arch}" replaced by cuda_arch(cfg). The build cache key hashes this
  // argv, so a changed toolchain.cuda_arch never reuses artifacts built for another arch.
  std::vector<std::string> argv_for(const kjudge::v1::NativeTask& task, const Config& cfg) const;
  // The same with the node's arch without config (cuda_arch()): tools that have no Config.
  std::vector<std::string> argv_for(const kjudge::v1::NativeTask& task) const;
  std::string artifact_for(const kjudge::v1::NativeTask& task) const;

  // Full build argv including the job's flags (already checked).
  std::vector<std::string> build_argv(const google::protobuf::RepeatedPtrField<std::string>& flags) const;
  // A message when a flag is not allowed.
  std::optional<std::string> check_flags(const google::protobuf::RepeatedPtrField<std::string>& flags) const;
};

// CUDA architecture for nvcc: $KJUDGE_CUDA_ARCH, else `nvidia-smi --query-gpu=compute_cap` on this
// node (e.g. "9.0" -> "sm_90"), else the fallback "sm_90". Detected once per process.
std::string cuda_arch();
// toolchain.cuda_arch when set (validated at load), else cuda_arch().
std::string cuda_arch(const Config& cfg);
std::string parse_compute_cap(const std::string& nvidia_smi_output);  // "" when unparsable

const Toolchain* toolchain_for(kjudge::v1::Language language);  // nullptr when unsupported

}  // namespace kj
