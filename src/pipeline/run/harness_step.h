// Runs one role of the Python harness (python/kjudge_harness) in a sandbox: the request as JSON
// in the party's /job, the report read back as JSON. The report is the sandboxed side's word:
// parsed, never trusted beyond its fields, and only read when the process exited normally.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "kjsandbox/policy.h"
#include "kjsandbox/report.h"

namespace kj {

inline constexpr const char* kHarnessInSandbox = "/opt/kjudge/python";
inline constexpr const char* kKernelTraceInSandbox = "/opt/kjudge/lib/libkjudge_kernel_trace.so";

struct HarnessStep {
  kjsandbox::Report sandbox;
  std::optional<nlohmann::json> report;
  std::optional<std::string> host_fault;  // the role failed and the host is why (host_fault.h)
};

enum class SlotKind { Compile, Run };

struct HarnessRun {
  std::string role;                                // pch, build, candidate
  SlotKind slot = SlotKind::Compile;
  std::filesystem::path job_dir;                   // the party dir, /job inside
  nlohmann::json request;
  std::uint32_t wall_ms = 60'000;
  std::uint64_t output_bytes = 1 << 20;
  std::string device_profile;                      // run slots: "nvidia-cuda" or "" (CPU)
  std::vector<kjsandbox::BindMount> binds;         // extra read-only binds (inputs, builds, caches)
  std::uint64_t file_size_bytes = 0;               // 0 = the sandbox default
  std::function<std::chrono::milliseconds()> wall_extension;  // kjsandbox::Policy::wall_extension
};

HarnessStep run_harness(const Config& cfg, const HarnessRun& run);

// Starts the harness zygote (python/kjudge_harness/zygote.py) unless [kernelbench] zygote is off
// or its library is missing; run_harness resumes roles from it once it is up. Idempotent.
bool start_harness_zygote(const Config& cfg);
// Starts it and waits up to `timeout` for it to serve (a one-shot `kjudge eval`: every role is
// then resumed, none imports torch itself); false when it is off or did not come up in time.
bool await_harness_zygote(const Config& cfg, std::chrono::milliseconds timeout);

// The sandbox policy of a harness process (run.request and run.role unused): the slot's policy,
// the harness bound at kHarnessInSandbox, the interpreter's environment. Also the trusted worker's.
kjsandbox::Policy harness_policy(const Config& cfg, const HarnessRun& run, std::vector<std::string> argv);

}  // namespace kj
