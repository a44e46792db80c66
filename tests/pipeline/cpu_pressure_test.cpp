// The wall-limit grant for a loaded node (pipeline/run/cpu_pressure.h): PSI's text read as the
// kernel writes it, and a grant that follows real CPU pressure and never passes its cap.
#include "pipeline/run/cpu_pressure.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

TEST(CpuPressure, ReadsTheSomeTotalOfPsiText) {
  EXPECT_EQ(kj::parse_pressure_some_us("some avg10=0.06 avg60=17.73 avg300=50.97 total=4179018610\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
            4179018610u);
  EXPECT_EQ(kj::parse_pressure_some_us("some avg10=0.00 avg60=0.00 avg300=0.00 total=0"), 0u);
  EXPECT_FALSE(kj::parse_pressure_some_us("full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"));
  EXPECT_FALSE(kj::parse_pressure_some_us("some avg10=0.00 avg60=0.00 avg300=0.00 total=\n"));
  EXPECT_FALSE(kj::parse_pressure_some_us(""));
}

// More busy threads than CPUs for a while: the runnable ones wait, so the grant grows, up to its cap.
TEST(CpuPressure, TheGrantFollowsRealPressureUpToItsCap) {
  const auto grant = kj::cpu_pressure_extension(50ms);
  const auto uncapped = kj::cpu_pressure_extension(1h);
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
    busy.emplace_back([&] { while (!stop.load(std::memory_order_relaxed)) {} });
  std::this_thread::sleep_for(400ms);
  stop = true;
  for (auto& t : busy) t.join();
  if (!kj::cpu_pressure_some_us()) {  // a kernel without PSI grants nothing
    EXPECT_EQ(grant(), 0ms);
    EXPECT_EQ(uncapped(), 0ms);
    return;
  }
  EXPECT_GT(uncapped(), 50ms);
  EXPECT_EQ(grant(), 50ms);
  EXPECT_EQ(kj::cpu_pressure_extension(0ms)(), 0ms);
}
