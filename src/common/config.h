// kjudged configuration: TOML file plus a drop-in directory (<file>.d/*.toml, applied in name
// order), then command-line overrides. Every field has a default that works in --dev mode.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kj {

struct RedisConfig {
  std::string url = "tcp://127.0.0.1:6379";
  std::string username;
  std::string password;
  int partition = 0;
};

struct SandboxConfig {
  std::optional<std::uint32_t> host_uid;  // unset: 65534 when root, own uid otherwise
  std::optional<std::uint32_t> host_gid;
  std::vector<std::string> extra_ro_binds;  // added to every sandbox (e.g. a toolchain outside /usr)
};

struct LimitsConfig {  // defaults when a job leaves a limit at 0, and the maximum it may ask for
  std::uint32_t compile_wall_ms = 60'000;
  std::uint32_t run_wall_ms = 10'000;
  std::uint32_t max_compile_wall_ms = 300'000;
  std::uint32_t max_run_wall_ms = 120'000;
  std::uint64_t output_bytes = 1 << 20;
  std::uint64_t max_job_bytes = 8 << 20;   // a serialized Job larger than this is INVALID_JOB
};

struct Config {
  std::string node;                        // defaults to the host name
  std::filesystem::path state_dir = "/var/lib/kjudge";
  unsigned workers = 2;                    // concurrent jobs on this node
  std::chrono::seconds result_ttl{24 * 3600};
  std::chrono::seconds heartbeat_ttl{15};
  std::string log_level = "info";
  bool keep_job_dirs = false;              // debugging: leave per-job dirs behind
  std::filesystem::path runner_path;       // kjudge-runner; default: next to the running binary
  std::string opencl_device_type;          // "", "gpu", "cpu", "all" → KJUDGE_OPENCL_DEVICE_TYPE
  RedisConfig redis;
  SandboxConfig sandbox;
  LimitsConfig limits;
};

// Throws std::runtime_error with the file and the offending key on bad input.
Config load_config(const std::optional<std::filesystem::path>& file);

// Directory of the running executable (for finding sibling binaries like kjudge-runner).
std::filesystem::path self_dir();

}  // namespace kj
