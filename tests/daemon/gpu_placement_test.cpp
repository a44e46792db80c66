// Placement over several GPUs (one kjudged drives every GPU of its node): jobs spread over the
// usable GPUs, a GPU whose canary fails after a fault is quarantined and gets nothing while the
// others keep taking jobs, a job waits for any healthy GPU, and the per-GPU metrics say so.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "daemon/gpu_health.h"
#include "daemon/gpu_placement.h"

namespace {

using namespace std::chrono_literals;
using kj::CanaryResult;
using kj::GpuHealth;
using kj::GpuJobOutcome;
using kj::GpuPlacement;

// A canary that fails on the GPUs named, passes elsewhere.
kj::CanaryFn failing_on(std::set<int> bad) {
  return [bad](int gpu) { return bad.count(gpu) ? CanaryResult{false, "wrong result"} : CanaryResult{true, "pass"}; };
}

TEST(GpuPlacement, JobsSpreadOverEveryGpuLeastLoadedFirst) {
  GpuHealth health(failing_on({}));
  GpuPlacement p({0, 2, 5}, health);
  std::map<int, int> got;
  for (int i = 0; i < 6; ++i) ++got[*p.place(0ms)];
  EXPECT_EQ(got, (std::map<int, int>{{0, 2}, {2, 2}, {5, 2}}));
  p.release(2);
  EXPECT_EQ(*p.place(0ms), 2);  // the one with room
  EXPECT_EQ(p.running(), (std::map<int, unsigned>{{0, 2}, {2, 2}, {5, 2}}));
}

TEST(GpuPlacement, AFaultedGpuIsQuarantinedAndTheOthersKeepJudging) {
  GpuHealth health(failing_on({1}));
  GpuPlacement p({0, 1}, health);
  const int a = *p.place(0ms), b = *p.place(0ms);
  ASSERT_EQ(std::set<int>({a, b}), std::set<int>({0, 1}));
  // the job on GPU 1 ends in an illegal address; its canary fails: quarantined
  EXPECT_FALSE(health.after_job(1, GpuJobOutcome::CudaFault, "job-x: illegal address"));
  p.release(1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(*p.place(0ms), 0) << "job " << i;
  EXPECT_TRUE(p.any_usable());
  EXPECT_EQ(p.running().at(1), 0u);
  // an operator clears it: it takes jobs again
  ASSERT_TRUE(health.clear(1));
  EXPECT_EQ(*p.place(0ms), 1);
}

TEST(GpuPlacement, AJobWaitsForAnyHealthyGpu) {
  GpuHealth health(failing_on({}));
  GpuPlacement p({3, 4}, health);
  health.quarantine(3, "operator");
  health.quarantine(4, "operator");
  EXPECT_FALSE(p.any_usable());
  EXPECT_FALSE(p.place(50ms));  // none within the wait
  std::thread clear([&] {
    std::this_thread::sleep_for(100ms);
    health.clear(4);
  });
  const auto g = p.place(5s);
  clear.join();
  ASSERT_TRUE(g);
  EXPECT_EQ(*g, 4);
}

TEST(GpuPlacement, MetricsPerGpu) {
  GpuHealth health(failing_on({7}));
  GpuPlacement p({6, 7}, health);
  p.place(0ms);
  health.after_job(7, GpuJobOutcome::Timeout, "job-y: timeout");
  const std::string text = p.render_metrics() + health.render_metrics();
  EXPECT_NE(text.find("kjudge_gpu_running_jobs{gpu=\"6\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("kjudge_gpu_running_jobs{gpu=\"7\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("kjudge_gpu_quarantined{gpu=\"7\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("kjudge_gpu_quarantined{gpu=\"6\"} 0"), std::string::npos) << text;
}

TEST(GpuPlacement, EveryTrackedGpuIsReportedBeforeItsFirstJob) {
  GpuHealth health(failing_on({}));
  health.track(2);
  health.track(9);
  const std::string text = health.render_metrics();
  EXPECT_NE(text.find("kjudge_gpu_quarantined{gpu=\"2\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("kjudge_gpu_quarantined{gpu=\"9\"} 0"), std::string::npos) << text;
  EXPECT_EQ(health.to_json()["gpus"].size(), 2u);
}

}  // namespace
