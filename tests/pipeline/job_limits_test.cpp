#include "pipeline/job/limits.h"

#include <gtest/gtest.h>

namespace {
namespace v1 = kjudge::v1;

kj::Config node() {
  kj::Config cfg;
  cfg.limits.compile_wall_ms = 30000;
  cfg.limits.run_wall_ms = 10000;
  cfg.limits.output_bytes = 1 << 20;
  cfg.kernelbench.compile_wall_ms = 600000;
  cfg.kernelbench.run_wall_ms = 300000;
  return cfg;
}

TEST(JobLimits, ZeroTakesTheNodesDefaultForTheJobsFormat) {
  v1::Job native, kb;
  native.mutable_native();
  kb.mutable_kernelbench();
  EXPECT_EQ(kj::job_limits(native, node()).compile_ms, 30000u);
  EXPECT_EQ(kj::job_limits(native, node()).run_ms, 10000u);
  EXPECT_EQ(kj::job_limits(kb, node()).compile_ms, 600000u);
  EXPECT_EQ(kj::job_limits(kb, node()).run_ms, 300000u);
  EXPECT_EQ(kj::job_limits(kb, node()).output_bytes, 1u << 20);
}

TEST(JobLimits, TheJobsOwnLimitsWinAndOutputNeverExceedsTheNodes) {
  v1::Job kb;
  kb.mutable_kernelbench();
  kb.mutable_limits()->set_compile_wall_ms(5000);
  kb.mutable_limits()->set_run_wall_ms(7000);
  kb.mutable_limits()->set_output_bytes(4096);
  const auto l = kj::job_limits(kb, node());
  EXPECT_EQ(l.compile_ms, 5000u);
  EXPECT_EQ(l.run_ms, 7000u);
  EXPECT_EQ(l.output_bytes, 4096u);
  kb.mutable_limits()->set_output_bytes(1u << 30);
  EXPECT_EQ(kj::job_limits(kb, node()).output_bytes, 1u << 20);
}

TEST(JobLimits, TrialPlan) {
  v1::Job job;
  auto p = kj::trial_plan(job);
  EXPECT_EQ(p.warmup, 3u);
  EXPECT_EQ(p.min_trials, 10u);
  EXPECT_EQ(p.max_trials, 100u);
  job.mutable_options()->mutable_timing()->set_max_trials(5);  // min never above max
  EXPECT_EQ(kj::trial_plan(job).min_trials, 5u);
  job.mutable_options()->mutable_timing()->set_skip(true);
  p = kj::trial_plan(job);
  EXPECT_EQ(p.max_trials, 0u);
  EXPECT_EQ(p.min_trials, 0u);
}

}  // namespace
