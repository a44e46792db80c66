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

// Found on an H100 (rlstep, 2026-11-27): 7 GiB-input jobs failed five deliveries in 15 s on a
// device full of their neighbours' sets. A retry takes the device alone: it waits for the holds
// out, and new ones wait for it (else 16 slots refilling would never let it in).
TEST(DeviceBudget, ARetryHasTheDeviceAlone) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(1, 100));
  std::atomic<bool> alone_in{false}, later_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> alone;
  std::thread retry([&] {
    alone = std::make_unique<kj::DeviceBudget::Hold>(b.acquire_alone());
    alone_in = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(alone_in);  // a small hold is still out
  std::thread later([&] {
    auto h = b.acquire(1, 100);  // would fit, but the retry came first
    later_in = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(later_in);
  running.reset();
  retry.join();
  EXPECT_TRUE(alone_in);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(later_in);  // not while the retry runs
  alone.reset();
  later.join();
  EXPECT_TRUE(later_in);
  EXPECT_EQ(b.held(), 0u);
}

// Found on 4 H100s (fidelity run 18, 2026-11-27): a 6 GiB-per-tensor job measured under load
// waited 13 minutes while 15 smaller jobs kept being admitted past it. Admission is in order.
TEST(DeviceBudget, ALargeJobIsNotPassedBySmallerOnesArrivingAfterIt) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> large_in{false}, small_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> large;
  std::thread large_job([&] {
    large = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(80, 100));  // waits for room
    large_in = true;
  });
  std::this_thread::sleep_for(100ms);
  std::thread small_job([&] {
    auto h = b.acquire(10, 100);  // would fit beside the 60, but the large job came first
    small_in = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(large_in);
  EXPECT_FALSE(small_in);
  running.reset();
  large_job.join();
  EXPECT_TRUE(large_in);
  small_job.join();  // 80 + 10 fit: admitted right behind it
  EXPECT_TRUE(small_in);
  large.reset();
  EXPECT_EQ(b.held(), 0u);
}

}  // namespace
