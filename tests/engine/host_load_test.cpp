// Host load is not the candidate's time (docs/timing.md): its own binary, run alone by ctest
// (RUN_SERIAL), since its real-time spinner takes most of one CPU from every other test too.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <thread>

#include "engine_judge.h"
#include "kjsandbox/sandbox.h"

namespace {
namespace v1 = kjudge::v1;

// Host load is not time outside the measured region. Another process holding the CPU the timed
// loop runs on (here a real-time spinner, 60 ms of every 80) stretches the loop on the daemon's
// clock, but the loop's process was waiting for a CPU, not working: after a quiet run set the
// baseline, the honest kernel judged under that load is still OK, and the wait is reported.
// (Before the wait was counted, this was SUSPICIOUS: the baseline's harness overhead came from
// the quiet run, CI of 8b33320.)
class CpuHog {
 public:
  explicit CpuHog(int cpu) {
    thread_ = std::thread([this, cpu] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_param fifo{};
      fifo.sched_priority = 10;
      ok_ = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0 &&
            pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
      started_ = true;
      while (ok_ && !stop_) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(60);
        while (std::chrono::steady_clock::now() < until) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    while (!started_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~CpuHog() {
    stop_ = true;
    thread_.join();
  }
  bool ok() const { return ok_; }

 private:
  std::atomic<bool> ok_{false}, started_{false}, stop_{false};
  std::thread thread_;
};

TEST(HostLoad, APreemptedLoopIsNotTimeOutsideTheMeasuredRegion) {
  std::string why;
  ASSERT_TRUE(kjsandbox::namespaces_available(&why)) << why;
  kjsandbox::set_zygote_enabled(false);  // the sandboxes are cloned from this thread: they inherit its CPU
  cpu_set_t cpu0;
  CPU_ZERO(&cpu0);
  CPU_SET(0, &cpu0);
  ASSERT_EQ(sched_setaffinity(0, sizeof(cpu0), &cpu0), 0);
  const auto quiet = kj::test::judge_native("saxpy/task.json", "saxpy/honest.cpp");
  ASSERT_EQ(quiet.status(), v1::OK) << quiet.message();
  CpuHog hog(0);
  if (!hog.ok()) GTEST_SKIP() << "no real-time scheduling here (needs CAP_SYS_NICE)";
  const auto loaded = kj::test::judge_native("saxpy/task.json", "saxpy/honest.cpp");
  EXPECT_EQ(v1::Verdict_Name(loaded.status()), "OK") << loaded.message();
  EXPECT_TRUE(loaded.performance().baseline_cached()) << "the bound must come from the quiet run";
  EXPECT_GT(loaded.performance().loop_cpu_wait_ms(), 0) << loaded.performance().DebugString();
  EXPECT_LE(loaded.performance().outside_wall_ms(), loaded.performance().outside_bound_ms());
  const auto& p = loaded.performance();
  std::printf("loop %.1f ms on the daemon's clock, bound %.1f ms of which %.1f ms waited for a CPU; quiet: %.1f / %.1f\n",
              p.outside_wall_ms(), p.outside_bound_ms(), p.loop_cpu_wait_ms(), quiet.performance().outside_wall_ms(),
              quiet.performance().outside_bound_ms());
}

}  // namespace
