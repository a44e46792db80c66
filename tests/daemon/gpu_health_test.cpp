// GpuHealth's state machine with injected canary results: when a canary runs, what a pass and a
// failure do, stuck children, operator clear, re-probing, concurrent slots, and the canary
// report mapping. The real binary and sandbox are in canary_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/gpu_health.h"

namespace {

using namespace std::chrono_literals;
using kj::CanaryResult;
using kj::GpuHealth;
using kj::GpuJobOutcome;
using kj::GpuState;

// A canary that answers from a script and counts its runs.
struct ScriptedCanary {
  std::mutex mu;
  std::vector<CanaryResult> answers;  // consumed front to back; the last one repeats
  std::vector<int> calls;             // gpu of each run
  kj::CanaryFn fn() {
    return [this](int gpu) {
      std::lock_guard lk(mu);
      calls.push_back(gpu);
      if (answers.empty()) return CanaryResult{true, "pass"};
      CanaryResult r = answers.front();
      if (answers.size() > 1) answers.erase(answers.begin());
      return r;
    };
  }
  std::size_t runs() {
    std::lock_guard lk(mu);
    return calls.size();
  }
};

// A canary that blocks until the test lets it go, to hold a GPU in Checking.
struct GatedCanary {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  CanaryResult answer{true, "pass"};
  std::atomic<int> started{0}, running{0}, max_running{0};
  kj::CanaryFn fn() {
    return [this](int) {
      ++started;
      const int now = ++running;
      for (int m = max_running; now > m && !max_running.compare_exchange_weak(m, now);) {
      }
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return open; });
      --running;
      return answer;
    };
  }
  void release(CanaryResult r) {
    std::lock_guard lk(mu);
    answer = std::move(r);
    open = true;
    cv.notify_all();
  }
};

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

kj::GpuStatus status_of(const GpuHealth& h, int gpu) {
  for (const auto& s : h.snapshot())
    if (s.gpu == gpu) return s;
  ADD_FAILURE() << "gpu " << gpu << " not in the snapshot";
  return {};
}

TEST(GpuHealth, CleanJobRunsNoCanary) {
  ScriptedCanary c;
  GpuHealth h(c.fn());
  EXPECT_TRUE(h.after_job(0, GpuJobOutcome::Clean));
  EXPECT_TRUE(h.usable(0));
  EXPECT_EQ(c.runs(), 0u);
}

TEST(GpuHealth, FaultRunsCanaryAndAPassKeepsTheGpu) {
  ScriptedCanary c;
  GpuHealth h(c.fn());
  for (auto o : {GpuJobOutcome::CudaFault, GpuJobOutcome::Unavailable, GpuJobOutcome::Timeout, GpuJobOutcome::Killed})
    EXPECT_TRUE(h.after_job(3, o, "job j1")) << kj::to_string(o);
  EXPECT_EQ(c.runs(), 4u);
  EXPECT_EQ(c.calls, (std::vector<int>{3, 3, 3, 3}));
  const auto s = status_of(h, 3);
  EXPECT_EQ(s.state, GpuState::Healthy);
  EXPECT_EQ(s.canaries, 4u);
  EXPECT_EQ(s.canary_failures, 0u);
  EXPECT_EQ(s.quarantines, 0u);
  EXPECT_EQ(s.last_canary, "pass");
}

TEST(GpuHealth, FailedCanaryQuarantinesAndItSticks) {
  ScriptedCanary c;
  c.answers = {{false, "verify_kernel: 12 of 524301 elements wrong"}};
  GpuHealth h(c.fn());
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::CudaFault, "job j7"));
  EXPECT_FALSE(h.usable(0));
  auto s = status_of(h, 0);
  EXPECT_EQ(s.state, GpuState::Quarantined);
  EXPECT_NE(s.reason.find("cuda_fault"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("job j7"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("elements wrong"), std::string::npos) << s.reason;
  EXPECT_NE(s.since, std::chrono::system_clock::time_point{});
  EXPECT_FALSE(s.reprobe_eligible);  // re-probing is off by default
  // More jobs (should the daemon send any) neither run canaries nor lift it.
  c.answers = {{true, "pass"}};
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::Timeout));
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::Clean));
  EXPECT_TRUE(h.reprobe().empty());
  EXPECT_EQ(c.runs(), 1u);
  EXPECT_FALSE(h.usable(0));
  // Another GPU is not affected.
  EXPECT_TRUE(h.usable(1));
  EXPECT_TRUE(h.after_job(1, GpuJobOutcome::CudaFault));
}

TEST(GpuHealth, CanaryThatThrowsCountsAsFailure) {
  GpuHealth h([](int) -> CanaryResult { throw std::runtime_error("no sandbox"); });
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::Killed));
  EXPECT_NE(status_of(h, 0).reason.find("canary could not run: no sandbox"), std::string::npos);
}

TEST(GpuHealth, StuckChildQuarantinesWithoutACanary) {
  ScriptedCanary c;
  GpuHealth h(c.fn(), {.reprobe_interval = 1ms, .reprobe_passes = 1, .clock = {}});
  EXPECT_FALSE(h.after_job(2, GpuJobOutcome::StuckChild, "pid 4242 in D state"));
  EXPECT_EQ(c.runs(), 0u);
  const auto s = status_of(h, 2);
  EXPECT_EQ(s.state, GpuState::Quarantined);
  EXPECT_NE(s.reason.find("stuck in the driver"), std::string::npos);
  EXPECT_NE(s.reason.find("pid 4242"), std::string::npos);
  EXPECT_FALSE(s.reprobe_eligible);  // only an operator lifts this one
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(h.reprobe().empty());
  EXPECT_EQ(c.runs(), 0u);
}

TEST(GpuHealth, OperatorClearLiftsQuarantine) {
  ScriptedCanary c;
  c.answers = {{false, "memset: CUDA_ERROR_ECC_UNCORRECTABLE"}, {true, "pass"}};
  GpuHealth h(c.fn());
  std::string why;
  EXPECT_FALSE(h.clear(0, &why));  // nothing to clear
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::CudaFault));
  EXPECT_TRUE(h.clear(0, &why));
  EXPECT_NE(why.find("ECC_UNCORRECTABLE"), std::string::npos);
  EXPECT_TRUE(h.usable(0));
  EXPECT_EQ(status_of(h, 0).state, GpuState::Healthy);
  EXPECT_TRUE(h.after_job(0, GpuJobOutcome::Timeout));  // checked again next time, and passes
  EXPECT_EQ(c.runs(), 2u);
  EXPECT_EQ(status_of(h, 0).quarantines, 1u);

  h.quarantine(0, "operator: fan failure");
  EXPECT_FALSE(h.usable(0));
  EXPECT_EQ(status_of(h, 0).reason, "operator: fan failure");
  EXPECT_TRUE(h.clear(0));
  EXPECT_TRUE(h.usable(0));
}

TEST(GpuHealth, ReprobeReleasesAfterConsecutivePassesOnePerInterval) {
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  ScriptedCanary c;
  c.answers = {{false, "first"}, {true, "p1"}, {false, "f2"}, {true, "p2"}, {true, "p3"}, {true, "p4"}, {true, "p5"}};
  GpuHealth h(c.fn(), {.reprobe_interval = 60s, .reprobe_passes = 3, .clock = [&] { return now; }});
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::CudaFault));
  EXPECT_TRUE(status_of(h, 0).reprobe_eligible);
  EXPECT_TRUE(h.reprobe().empty());  // interval not over yet
  EXPECT_EQ(c.runs(), 1u);

  auto step = [&] {
    now += 61s;
    return h.reprobe();
  };
  EXPECT_TRUE(step().empty());  // p1: streak 1
  EXPECT_EQ(status_of(h, 0).reprobe_streak, 1u);
  EXPECT_TRUE(h.reprobe().empty());  // same instant: not due again
  EXPECT_EQ(c.runs(), 2u);
  EXPECT_TRUE(step().empty());  // f2: streak back to 0
  EXPECT_EQ(status_of(h, 0).reprobe_streak, 0u);
  EXPECT_EQ(status_of(h, 0).state, GpuState::Quarantined);
  EXPECT_TRUE(step().empty());  // p2
  EXPECT_TRUE(step().empty());  // p3
  EXPECT_EQ(step(), std::vector<int>{0});  // p4: third pass in a row
  EXPECT_EQ(status_of(h, 0).state, GpuState::Healthy);
  EXPECT_TRUE(h.usable(0));
  EXPECT_EQ(c.runs(), 6u);
  EXPECT_TRUE(step().empty());  // healthy GPUs are not probed
  EXPECT_EQ(c.runs(), 6u);
  EXPECT_EQ(status_of(h, 0).canary_failures, 2u);
}

TEST(GpuHealth, OperatorQuarantineIsNeverReprobed) {
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  ScriptedCanary c;
  GpuHealth h(c.fn(), {.reprobe_interval = 1s, .reprobe_passes = 1, .clock = [&] { return now; }});
  h.quarantine(1, "operator");
  now += 1h;
  EXPECT_TRUE(h.reprobe().empty());
  EXPECT_EQ(c.runs(), 0u);
  EXPECT_FALSE(h.usable(1));
}

TEST(GpuHealth, ClearDuringReprobeDiscardsItsResult) {
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  GatedCanary gate;
  std::atomic<bool> first{true};
  auto gated = gate.fn();
  GpuHealth h(
      [&](int gpu) {
        if (first.exchange(false)) return CanaryResult{false, "bad"};
        return gated(gpu);
      },
      {.reprobe_interval = 1s, .reprobe_passes = 1, .clock = [&] { return now; }});
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::CudaFault));
  now += 2s;
  std::vector<int> released;
  std::thread t([&] { released = h.reprobe(); });
  ASSERT_TRUE(eventually([&] { return gate.started == 1; }));
  EXPECT_TRUE(h.clear(0));
  h.quarantine(0, "operator again");  // a new quarantine: the running probe belongs to the old one
  gate.release({true, "pass"});
  t.join();
  EXPECT_TRUE(released.empty());
  EXPECT_EQ(status_of(h, 0).reason, "operator again");
  EXPECT_FALSE(h.usable(0));
}

// Eight slots end faulty jobs on one GPU while its canary runs: they wait, are answered by one
// more run that started after their faults, and canaries never overlap on a GPU.
TEST(GpuHealth, ConcurrentFaultsShareCanaryRuns) {
  GatedCanary gate;
  GpuHealth h(gate.fn());
  std::vector<std::thread> slots;
  std::atomic<int> usable_after{0};
  slots.emplace_back([&] { usable_after += h.after_job(0, GpuJobOutcome::CudaFault); });
  ASSERT_TRUE(eventually([&] { return gate.started == 1; }));
  EXPECT_FALSE(h.usable(0));
  EXPECT_EQ(status_of(h, 0).state, GpuState::Checking);
  for (int i = 0; i < 7; ++i)
    slots.emplace_back([&, i] { usable_after += h.after_job(0, i % 2 ? GpuJobOutcome::Timeout : GpuJobOutcome::Killed); });
  ASSERT_TRUE(eventually([&] { return status_of(h, 0).pending_checks == 8; }));
  // Meanwhile another GPU's canary is not held up by this one's.
  std::atomic<bool> other_done{false};
  GpuHealth other([](int) { return CanaryResult{true, "pass"}; });
  std::thread t([&] { other_done = other.after_job(1, GpuJobOutcome::CudaFault); });
  t.join();
  EXPECT_TRUE(other_done);
  gate.release({true, "pass"});
  for (auto& s : slots) s.join();
  EXPECT_EQ(usable_after, 8);
  EXPECT_EQ(gate.started, 2);  // the first fault's run, then one run for the seven that came later
  EXPECT_EQ(gate.max_running, 1);
  EXPECT_EQ(status_of(h, 0).pending_checks, 0u);
  EXPECT_TRUE(h.usable(0));
}

// Many GPUs, many slots, random outcomes: no deadlock, canaries never overlap per GPU, and every
// fault is followed by a canary.
TEST(GpuHealth, StressManySlotsManyGpus) {
  std::mutex mu;
  std::map<int, int> running;
  std::atomic<int> overlaps{0}, runs{0};
  GpuHealth h([&](int gpu) {
    {
      std::lock_guard lk(mu);
      if (++running[gpu] > 1) ++overlaps;
    }
    ++runs;
    std::this_thread::sleep_for(200us);
    std::lock_guard lk(mu);
    --running[gpu];
    return CanaryResult{true, "pass"};
  });
  std::atomic<int> faults{0};
  std::vector<std::thread> slots;
  for (int t = 0; t < 8; ++t)
    slots.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const auto o = static_cast<GpuJobOutcome>((t * 7 + i) % 4);  // Clean, Killed, Timeout, CudaFault
        if (o != GpuJobOutcome::Clean) ++faults;
        EXPECT_TRUE(h.after_job((t + i) % 3, o));
      }
    });
  for (auto& s : slots) s.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_GE(runs, 3);
  EXPECT_LE(runs, faults.load());
  for (const auto& s : h.snapshot()) {
    EXPECT_EQ(s.state, GpuState::Healthy);
    EXPECT_EQ(s.pending_checks, 0u);
  }
}

// A failing canary while slots wait: all of them learn the GPU is quarantined; no second run.
TEST(GpuHealth, ConcurrentFaultsAllSeeTheQuarantine) {
  GatedCanary gate;
  GpuHealth h(gate.fn());
  std::vector<std::thread> slots;
  std::atomic<int> usable_after{0};
  slots.emplace_back([&] { usable_after += h.after_job(0, GpuJobOutcome::CudaFault); });
  ASSERT_TRUE(eventually([&] { return gate.started == 1; }));
  for (int i = 0; i < 5; ++i) slots.emplace_back([&] { usable_after += h.after_job(0, GpuJobOutcome::Timeout); });
  ASSERT_TRUE(eventually([&] { return status_of(h, 0).pending_checks == 6; }));
  gate.release({false, "wedged"});
  for (auto& s : slots) s.join();
  EXPECT_EQ(usable_after, 0);
  EXPECT_EQ(gate.started, 1);
  EXPECT_EQ(status_of(h, 0).state, GpuState::Quarantined);
  EXPECT_EQ(status_of(h, 0).pending_checks, 0u);
  EXPECT_TRUE(h.clear(0));
  EXPECT_TRUE(h.usable(0));  // outstanding checks died with the quarantine
}

TEST(GpuHealth, StuckChildWhileACanaryRunsReleasesTheWaiters) {
  GatedCanary gate;
  GpuHealth h(gate.fn());
  std::atomic<int> usable_after{0};
  std::thread a([&] { usable_after += h.after_job(0, GpuJobOutcome::CudaFault); });
  ASSERT_TRUE(eventually([&] { return gate.started == 1; }));
  std::thread b([&] { usable_after += h.after_job(0, GpuJobOutcome::Killed); });
  ASSERT_TRUE(eventually([&] { return status_of(h, 0).pending_checks == 2; }));
  EXPECT_FALSE(h.after_job(0, GpuJobOutcome::StuckChild, "pid 9"));
  b.join();  // returns without waiting for the gated canary
  gate.release({true, "pass"});
  a.join();
  EXPECT_EQ(usable_after, 0);
  EXPECT_EQ(status_of(h, 0).state, GpuState::Quarantined);  // a pass does not undo a stuck child
}

TEST(GpuHealth, ClassifyPicksTheWorst) {
  EXPECT_EQ(GpuHealth::classify(false, false, false, false, false), GpuJobOutcome::Clean);
  EXPECT_EQ(GpuHealth::classify(false, false, false, true, false), GpuJobOutcome::Killed);
  EXPECT_EQ(GpuHealth::classify(false, false, true, true, false), GpuJobOutcome::Timeout);
  EXPECT_EQ(GpuHealth::classify(false, true, true, true, false), GpuJobOutcome::Unavailable);
  EXPECT_EQ(GpuHealth::classify(true, true, true, true, false), GpuJobOutcome::CudaFault);
  EXPECT_EQ(GpuHealth::classify(true, true, true, true, true), GpuJobOutcome::StuckChild);
}

TEST(GpuHealth, JsonAndMetrics) {
  ScriptedCanary c;
  c.answers = {{false, "timeout at sync_kernel"}};
  GpuHealth h(c.fn());
  EXPECT_EQ(h.render_metrics(), "");
  EXPECT_TRUE(h.after_job(0, GpuJobOutcome::Clean));
  EXPECT_FALSE(h.after_job(1, GpuJobOutcome::Timeout));
  const auto j = h.to_json();
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["state"], "healthy");
  EXPECT_EQ(j["gpus"][1]["state"], "quarantined");
  EXPECT_EQ(j["gpus"][1]["canary_failures"], 1);
  EXPECT_EQ(j["gpus"][1]["last_canary"], "timeout at sync_kernel");
  EXPECT_EQ(j["gpus"][1]["since"].get<std::string>().size(), 20u);  // 2025-01-01T00:00:00Z
  const std::string m = h.render_metrics();
  EXPECT_NE(m.find("# TYPE kjudge_gpu_quarantined gauge\n"), std::string::npos) << m;
  EXPECT_NE(m.find("kjudge_gpu_quarantined{gpu=\"0\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("kjudge_gpu_quarantined{gpu=\"1\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("kjudge_gpu_canary_failures_total{gpu=\"1\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("kjudge_gpu_quarantines_total{gpu=\"1\"} 1\n"), std::string::npos) << m;
}

// --- canary_result: the sandbox report of kjudge-canary -------------------------------------------

kjsandbox::Report exited(int code, std::string out) {
  kjsandbox::Report r;
  r.outcome = kjsandbox::Outcome::Exited;
  r.exit_code = code;
  r.stdout_data = std::move(out);
  return r;
}

TEST(CanaryResult, HealthyLinePasses) {
  auto r = kj::canary_result(exited(0, "{\"ok\":true,\"code\":0,\"result\":\"healthy\",\"step\":\"done\",\"name\":\"NVIDIA H100 80GB HBM3\",\"elapsed_ms\":412}\n"));
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_NE(r.detail.find("NVIDIA H100"), std::string::npos) << r.detail;
}

TEST(CanaryResult, FailureLineNamesStepAndError) {
  auto r = kj::canary_result(exited(1, "noise\n{\"ok\":false,\"code\":1,\"result\":\"gpu_error\",\"step\":\"launch\",\"error\":\"CUDA_ERROR_LAUNCH_FAILED\",\"detail\":\"CUDA call failed in step launch\"}\n"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("gpu_error at launch (CUDA_ERROR_LAUNCH_FAILED)"), std::string::npos) << r.detail;
}

TEST(CanaryResult, ExitZeroWithoutAReportFails) {
  EXPECT_FALSE(kj::canary_result(exited(0, "")).ok);
  EXPECT_FALSE(kj::canary_result(exited(0, "{\"ok\":false}\n")).ok);
}

TEST(CanaryResult, WallTimeoutSaysWedged) {
  kjsandbox::Report r;
  r.outcome = kjsandbox::Outcome::WallTimeout;
  r.wall_seconds = 20.01;
  auto res = kj::canary_result(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.detail.find("canary timed out"), std::string::npos) << res.detail;
  EXPECT_NE(res.detail.find("GPU may be wedged"), std::string::npos) << res.detail;
}

TEST(CanaryResult, SignalAndSetupFailures) {
  kjsandbox::Report sig;
  sig.outcome = kjsandbox::Outcome::Signaled;
  sig.signal = 11;
  sig.stderr_data = "Segmentation fault\n";
  auto a = kj::canary_result(sig);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.detail.find("signal 11"), std::string::npos) << a.detail;
  kjsandbox::Report setup;
  setup.outcome = kjsandbox::Outcome::SetupFailed;
  setup.error = "bind /dev/nvidia0: ENOENT";
  auto b = kj::canary_result(setup);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.detail.find("bind /dev/nvidia0"), std::string::npos) << b.detail;
}

TEST(CanaryResult, StuckTreeSaysSo) {
  kjsandbox::Report r;
  r.outcome = kjsandbox::Outcome::WallTimeout;
  r.stuck = true;
  auto res = kj::canary_result(r);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.detail.find("stuck in the driver"), std::string::npos) << res.detail;
}

}  // namespace
