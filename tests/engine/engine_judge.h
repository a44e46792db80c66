// One native job through kj::judge() with real sandboxes, the real compiler and runner, as the
// engine's tests need it: a task and candidate under examples/native/exploits, one state dir (its
// build and baseline caches shared by the test binary's run, as on a node, removed at the end).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli/job_builder.h"
#include "pipeline/judge.h"
#include "pipeline/run/workspace.h"

namespace kj::test {

inline std::filesystem::path engine_state_dir() {
  static const std::filesystem::path dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("kjengine-" + std::to_string(::getpid()));
    kj::prepare_state_dir(d);
    return d;
  }();
  return dir;
}

class EngineStateDir : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(engine_state_dir()); }
};
inline const auto* const kEngineStateDir = ::testing::AddGlobalTestEnvironment(new EngineStateDir);

// task and candidate: paths under KJ_EXPLOITS_DIR; 20 timed trials, 20 s a sandboxed run.
inline kjudge::v1::Result judge_native(const std::string& task, const std::string& candidate) {
  kj::Config cfg = kj::load_config(std::nullopt);
  cfg.state_dir = engine_state_dir();
  cfg.runner_path = KJ_RUNNER;
  kj::cli::JobSpec spec;
  spec.task_json = std::filesystem::path(KJ_EXPLOITS_DIR) / task;
  spec.candidate = std::filesystem::path(KJ_EXPLOITS_DIR) / candidate;
  spec.run_wall_ms = 20000;
  spec.trials = 20;
  const kjudge::v1::Job job = kj::cli::build_job(spec);
  return kj::judge(job, kj::JudgeContext{cfg, "test/0"});
}

}  // namespace kj::test
