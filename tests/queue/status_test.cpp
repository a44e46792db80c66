#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "queue_fixture.h"

using namespace std::chrono_literals;
using kjqueue::Keys;
using kjtest::QueueTest;

using QueueStatus = QueueTest;

TEST_F(QueueStatus, EmptyQueue) {
  auto s = queue.status();
  EXPECT_TRUE(s.tenants.empty());
  EXPECT_TRUE(s.nodes.empty());
}

TEST_F(QueueStatus, CountsQueuedPendingLagCompleted) {
  for (int i = 0; i < 3; ++i) queue.submit("team-a", "a-" + std::to_string(i), "p");
  auto got = queue.fetch("node-1", 2, 200ms);  // 2 of 3 delivered
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(queue.complete(got[0], got[0].job_id, "r", "OK", 60s));
  queue.submit("team-b", "b-0", "p");

  auto s = queue.status();
  ASSERT_EQ(s.tenants.size(), 2u);
  const auto& a = s.tenants[0];
  EXPECT_EQ(a.tenant, "team-a");
  EXPECT_EQ(a.queued, 3u);
  EXPECT_EQ(a.pending, 1u);
  EXPECT_EQ(a.lag, 1u);
  EXPECT_EQ(a.completed, 1u);
  const auto& b = s.tenants[1];
  EXPECT_EQ(b.tenant, "team-b");
  EXPECT_EQ(b.queued, 1u);
  EXPECT_EQ(b.pending, 0u);
  EXPECT_EQ(b.lag, 1u);
  EXPECT_EQ(b.completed, 0u);
}

TEST_F(QueueStatus, LagWithoutAGroupOrAfterDeletes) {
  queue.command({"SADD", Keys::tenants(0), "team-c"});  // registered, no stream yet
  queue.command({"SADD", Keys::tenants(0), "Not Valid"});  // ignored
  auto s = queue.status();
  ASSERT_EQ(s.tenants.size(), 1u);
  EXPECT_EQ(s.tenants[0].queued, 0u);
  EXPECT_EQ(s.tenants[0].lag, 0u);

  for (int i = 0; i < 4; ++i) queue.submit("team-d", "d-" + std::to_string(i), "p");
  ASSERT_EQ(queue.fetch("node-1", 1, 200ms).size(), 1u);
  // deleting an undelivered entry mid-stream makes Redis report lag as nil: we estimate
  auto ids = queue.command({"XRANGE", Keys::jobs(0, "team-d"), "-", "+"});
  queue.command({"XDEL", Keys::jobs(0, "team-d"), ids.at(5).value()});  // entries are 5 items each
  s = queue.status();
  auto it = std::find_if(s.tenants.begin(), s.tenants.end(), [](const auto& t) { return t.tenant == "team-d"; });
  ASSERT_NE(it, s.tenants.end());
  EXPECT_EQ(it->queued, 3u);
  EXPECT_EQ(it->pending, 1u);
  EXPECT_EQ(it->lag, 2u);
}

TEST_F(QueueStatus, HeartbeatShowsUpWithItsTtl) {
  queue.heartbeat("gpu-01", R"({"gpus":8})", 30s);
  queue.heartbeat("gpu-02", R"({"gpus":1})", 5s);
  kjqueue::Queue p1(redis.endpoint(), 1);
  p1.heartbeat("elsewhere", "{}", 30s);  // another partition

  auto s = queue.status();
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].node, "gpu-01");
  EXPECT_EQ(s.nodes[0].info, R"({"gpus":8})");
  EXPECT_GT(s.nodes[0].ttl_ms, 20000);
  EXPECT_LE(s.nodes[0].ttl_ms, 30000);
  EXPECT_EQ(s.nodes[1].node, "gpu-02");
  EXPECT_LE(s.nodes[1].ttl_ms, 5000);
  EXPECT_EQ(one({"GET", "kj:{p0}:node:gpu-01"}), R"({"gpus":8})");

  EXPECT_THROW(queue.heartbeat("bad/node", "{}", 30s), kjqueue::QueueError);
  EXPECT_THROW(queue.heartbeat("gpu-01", "{}", 0s), kjqueue::QueueError);
}
