// The native pipeline end to end, in-process (as `kjudge eval` runs it): every bundled example
// through real sandboxes, the real compiler, the real runner and PoCL; each gets its verdict.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/job_builder.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/judge.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/run/workspace.h"

namespace {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

struct Example {
  std::string task, candidate, expect;
};

std::vector<Example> load_examples() {
  std::ifstream in(fs::path(KJ_EXAMPLES_DIR) / "examples.json");
  std::vector<Example> out;
  for (auto& e : nlohmann::json::parse(in)) out.push_back({e["task"], e["candidate"], e["expect"]});
  return out;
}

void PrintTo(const Example& e, std::ostream* os) { *os << e.candidate << " → " << e.expect; }

class PipelineExample : public ::testing::TestWithParam<Example> {};

// A fresh state dir of this process (name: kjpipe-<tag>-<pid>) and the built runner.
kj::Config test_config(const std::string& tag) {
  kj::Config cfg = kj::load_config(std::nullopt);
  cfg.state_dir = fs::temp_directory_path() / ("kjpipe-" + tag + "-" + std::to_string(::getpid()));
  cfg.runner_path = KJ_RUNNER;
  kj::prepare_state_dir(cfg.state_dir);
  return cfg;
}

kj::cli::JobSpec spec_for(const std::string& task, const std::string& candidate) {
  kj::cli::JobSpec spec;
  spec.task_json = fs::path(KJ_EXAMPLES_DIR) / task;
  spec.candidate = fs::path(KJ_EXAMPLES_DIR) / candidate;
  return spec;
}

TEST_P(PipelineExample, GetsItsVerdict) {
  const auto& ex = GetParam();
  std::string why;
  ASSERT_TRUE(kjsandbox::namespaces_available(&why)) << why;
  const kj::Config cfg = test_config("ex");
  kj::cli::JobSpec spec = spec_for(ex.task, ex.candidate);
  spec.run_wall_ms = 4000;
  spec.trials = 3;
  spec.sets = 2;
  const v1::Job job = kj::cli::build_job(spec);
  const v1::Result r = kj::judge(job, kj::JudgeContext{cfg, "test/0"});
  fs::remove_all(cfg.state_dir);
  EXPECT_EQ(v1::Verdict_Name(r.status()), ex.expect) << r.message() << "\n" << r.feedback();
  EXPECT_FALSE(r.feedback().empty());
  EXPECT_EQ(r.reward().policy_version(), "default-v2");
  if (ex.expect == "OK") {
    EXPECT_EQ(r.correctness_size(), 2);
    EXPECT_EQ(r.performance().candidate().trials(), 3u);
    EXPECT_GT(r.performance().speedup(), 0);
  }
  if (ex.expect == "COMPILE_ERROR") {
    EXPECT_FALSE(r.compile().log().empty());
  }
  if (ex.expect == "INCORRECT") {
    ASSERT_GT(r.correctness_size(), 0);
    EXPECT_GT(r.correctness(0).outputs(0).mismatches(), 0u);
  }
}

// kjudged places a job on a GPU before it builds. If that GPU is quarantined meanwhile (another
// job's fault), the job's GPU work must not start there: INFRA_ERROR, retried on a healthy GPU.
TEST(PipelineGpu, AJobWhoseGpuWasQuarantinedWhileItBuiltDoesNotRunThere) {
  std::string why;
  ASSERT_TRUE(kjsandbox::namespaces_available(&why)) << why;
  const kj::Config cfg = test_config("q");
  kj::cli::JobSpec spec = spec_for("cuda/saxpy/task.json", "cuda/saxpy/ok.cu");
  spec.trials = 3;
  const v1::Job job = kj::cli::build_job(spec);
  kj::SandboxWatch watch;
  watch.gpu_quarantined = [] { return true; };
  const v1::Result r = kj::judge(job, kj::JudgeContext{cfg, "test/0", &watch});
  fs::remove_all(cfg.state_dir);
  EXPECT_EQ(v1::Verdict_Name(r.status()), "INFRA_ERROR") << r.message();
  EXPECT_NE(r.message().find("GPU was quarantined"), std::string::npos) << r.message();
  EXPECT_EQ(r.stage_reached(), v1::STAGE_BUILD) << "nothing ran on the quarantined GPU";
  EXPECT_TRUE(r.compile().ok()) << r.compile().log();
}

INSTANTIATE_TEST_SUITE_P(Examples, PipelineExample, ::testing::ValuesIn(load_examples()),
                         [](const auto& info) {
                           std::string n = info.param.candidate;
                           for (auto& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
