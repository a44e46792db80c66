// wait_result: no lost wake-up between "is it there?" and "block until it is".
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "queue_fixture.h"

using namespace std::chrono_literals;
using kjqueue::Keys;
using kjtest::QueueTest;
using Clock = std::chrono::steady_clock;

using QueueWaitResult = QueueTest;

namespace {

// What a worker does: fetch the job and complete it.
void work(const kjqueue::Endpoint& ep, const std::string& job_id, const std::string& result) {
  kjqueue::Queue q(ep);
  for (const auto& d : q.fetch("worker", 100, 2000ms)) {
    if (d.job_id == job_id) q.complete(d, d.job_id, result, "OK", 60s);
  }
}

}  // namespace

TEST_F(QueueWaitResult, ReturnsAResultCompletedBeforeTheWait) {
  queue.submit("team-a", "job-1", "p");
  work(redis.endpoint(), "job-1", "done-before");
  auto t0 = Clock::now();
  EXPECT_EQ(queue.wait_result("team-a", "job-1", 5000ms), "done-before");
  EXPECT_LT(Clock::now() - t0, 1000ms);
}

TEST_F(QueueWaitResult, ReturnsAResultCompletedDuringTheWait) {
  queue.submit("team-a", "other", "p");
  queue.submit("team-a", "job-1", "p");
  const auto t0 = Clock::now();  // before the worker starts: its 300 ms of sleeps are a lower bound on the wait
  std::thread worker([ep = redis.endpoint()] {
    std::this_thread::sleep_for(200ms);
    work(ep, "other", "other-result");  // an unrelated event first: the waiter must keep waiting
    std::this_thread::sleep_for(100ms);
    kjqueue::Queue q(ep);
    // job-1 is still pending on "worker"; claim it the way a reaper would, then complete it
    auto claimed = q.command({"XAUTOCLAIM", Keys::jobs(0, "team-a"), Keys::kGroup, "worker2", "0", "0-0"});
    ASSERT_GE(claimed.size(), 2u);
    kjqueue::Delivery d;
    d.tenant = "team-a";
    d.entry_id = claimed.at(1).value();
    q.complete(d, "job-1", "during", "OK", 60s);
  });
  auto got = queue.wait_result("team-a", "job-1", 10000ms);
  auto waited = Clock::now() - t0;
  worker.join();
  EXPECT_EQ(got, "during");
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 5000ms);
}

TEST_F(QueueWaitResult, TimesOutWithoutAResult) {
  queue.submit("team-a", "job-1", "p");
  auto t0 = Clock::now();
  EXPECT_EQ(queue.wait_result("team-a", "job-1", 300ms), std::nullopt);
  auto waited = Clock::now() - t0;
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 3000ms);
  // nothing submitted at all: same answer, no error
  EXPECT_EQ(queue.wait_result("nobody", "job-9", 50ms), std::nullopt);
}

TEST_F(QueueWaitResult, ManyEventsBeforeTheOneWaitedFor) {
  for (int i = 0; i < 30; ++i) queue.submit("team-a", "job-" + std::to_string(i), "p");
  std::thread worker([ep = redis.endpoint()] {
    kjqueue::Queue q(ep);
    std::this_thread::sleep_for(100ms);
    for (const auto& d : q.fetch("worker", 100, 2000ms)) q.complete(d, d.job_id, "r-" + d.job_id, "OK", 60s);
  });
  EXPECT_EQ(queue.wait_result("team-a", "job-29", 10000ms), "r-job-29");
  worker.join();
}
