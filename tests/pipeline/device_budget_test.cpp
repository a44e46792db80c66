#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "worker/device_budget.h"

namespace {
using namespace std::chrono_literals;

TEST(DeviceBudget, ACandidateWaitsUntilItFitsBesideTheOthers) {
  kj::DeviceBudget b;
  auto first = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> admitted{false};
  std::thread second([&] {
    auto h = b.acquire(50, 100);  // 60 + 50 > 100: waits for the first
    admitted = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(admitted);
  EXPECT_EQ(b.held(), 60u);
  first.reset();
  second.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(b.held(), 0u);
}

TEST(DeviceBudget, OneLargerThanTheWholeBudgetRunsAlone) {
  kj::DeviceBudget b;
  double waited = -1;
  { auto h = b.acquire(500, 100, &waited); EXPECT_EQ(b.held(), 500u); }
  EXPECT_GE(waited, 0.0);
  auto small = b.acquire(10, 100);
  auto other = b.acquire(20, 100);  // fits beside: no wait
  EXPECT_EQ(b.held(), 30u);
}

}  // namespace
