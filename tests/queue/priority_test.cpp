// Priority lanes within a tenant (kj_fetch): higher lanes first, aging so a lower lane's old job
// overtakes, and every per-entry operation (complete, lease, retry, reclaim) on the entry's own lane.
// Cluster-wide caps: kj_fetch admits a capped tenant's entries only below its cap on all nodes.
#include <gtest/gtest.h>

#include <thread>

#include "queue_fixture.h"

namespace {
using namespace std::chrono_literals;
using kjqueue::Keys;
using kjtest::QueueTest;

class QueuePriority : public QueueTest {
 protected:
  kjqueue::SubmitResult submit(const std::string& id, int lane) {
    kjqueue::SubmitOptions o;
    o.lane = lane;
    return queue.submit("t", id, "payload", o);
  }
  // An entry whose id (enqueue time) lies `age` in the past, on lane `lane`'s stream.
  void add_aged(const std::string& id, int lane, std::chrono::milliseconds age) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch() - age).count();
    queue.command({"XADD", Keys::jobs(0, "t", lane), std::to_string(ms) + "-0", "id", id, "job", "p"});
  }
  std::vector<std::string> order(std::size_t n, std::chrono::milliseconds aging) {
    std::vector<std::string> ids;
    for (auto& d : queue.read_new("c1", {{"t", n}}, aging)) ids.push_back(d.job_id);
    return ids;
  }
};

TEST_F(QueuePriority, LaneKeysAndPriorityMapping) {
  EXPECT_EQ(Keys::jobs(0, "t", 1), "kj:{p0}:jobs:t:high");
  EXPECT_EQ(Keys::jobs(0, "t", 0), "kj:{p0}:jobs:t");
  EXPECT_EQ(Keys::jobs(0, "t", -1), "kj:{p0}:jobs:t:low");
  EXPECT_EQ(kjqueue::lane_of_priority(7), 1);
  EXPECT_EQ(kjqueue::lane_of_priority(0), 0);
  EXPECT_EQ(kjqueue::lane_of_priority(-3), -1);
}

TEST_F(QueuePriority, HigherLanesFirstThenFifoWithinALane) {
  submit("low1", -1);
  submit("norm1", 0);
  submit("high1", 1);
  submit("norm2", 0);
  submit("high2", 1);
  EXPECT_EQ(order(5, 30s), (std::vector<std::string>{"high1", "high2", "norm1", "norm2", "low1"}));
  EXPECT_TRUE(order(5, 30s).empty());
}

TEST_F(QueuePriority, AgingLetsALowerLaneOvertake) {
  submit("seed", 0);  // registers the tenant and creates every lane's group
  ASSERT_EQ(order(1, 30s), std::vector<std::string>{"seed"});
  // aging 30 s: low scores -30 s + its wait, high +30 s + its wait
  add_aged("low-70s", -1, 70s);
  add_aged("high-5s", 1, 5s);
  EXPECT_EQ(order(1, 30s), std::vector<std::string>{"low-70s"});  // 40 s beats 35 s
  add_aged("low-50s", -1, 50s);
  EXPECT_EQ(order(1, 30s), std::vector<std::string>{"high-5s"});  // 35 s beats 20 s
  // with no aging the lanes do not matter: oldest first
  add_aged("high-1s", 1, 1s);
  EXPECT_EQ(order(2, 0ms), (std::vector<std::string>{"low-50s", "high-1s"}));
}

TEST_F(QueuePriority, EntriesAreCompletedLeasedRetriedAndReclaimedOnTheirLane) {
  submit("h", 1);
  submit("l", -1);
  auto got = queue.read_new("c1", {{"t", 2}});
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[0].job_id, "h");
  EXPECT_EQ(got[0].lane, 1);
  EXPECT_EQ(got[1].lane, -1);
  EXPECT_TRUE(queue.renew("t", "c1", {got[0].entry_id}, 1000ms, 1).empty());
  // a lease call on the wrong lane does not find the entry
  EXPECT_EQ(queue.renew("t", "c1", {got[0].entry_id}, 1000ms, 0), std::vector<std::string>{got[0].entry_id});
  const auto pending = queue.pending_of("c1");
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_TRUE(queue.complete(got[0], "h", "result", "OK", 60s));
  auto left = queue.command({"XPENDING", Keys::jobs(0, "t", 1), Keys::kGroup});
  EXPECT_EQ(left.at(0).value_or(""), "0");
  // an infrastructure retry goes back onto the low lane
  EXPECT_TRUE(queue.retry_later(got[1], "l", 1, std::chrono::system_clock::now()));
  EXPECT_EQ(queue.promote_due(), 1u);
  auto again = queue.read_new("c2", {{"t", 1}});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job_id, "l");
  EXPECT_EQ(again[0].lane, -1);
  EXPECT_EQ(again[0].attempt, 1u);
  // the reaper finds entries on every lane
  std::this_thread::sleep_for(30ms);
  auto stolen = queue.reclaim("c3", 20ms, 10);
  ASSERT_EQ(stolen.size(), 1u);
  EXPECT_EQ(stolen[0].lane, -1);
  // status sums the lanes
  const auto st = queue.status();
  ASSERT_EQ(st.tenants.size(), 1u);
  EXPECT_EQ(st.tenants[0].pending, 1u);
}

TEST_F(QueuePriority, ClusterCapAdmitsOnlyBelowTheCapAcrossConsumers) {
  for (int i = 0; i < 4; ++i) submit("c" + std::to_string(i), 0);
  submit("other", 0);
  queue.set_cap("t", 1);
  auto a = queue.read_new("node-a", {{"t", 3}}, 30s, 5000ms);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(queue.read_new("node-b", {{"t", 3}}, 30s, 5000ms).empty());  // another node: still capped
  EXPECT_EQ(queue.running_count("t"), 1u);
  // done: its member goes, the next one is admitted
  queue.release_running({{a[0].tenant, a[0].lane, a[0].entry_id}});
  auto b = queue.read_new("node-b", {{"t", 3}}, 30s, 5000ms);
  ASSERT_EQ(b.size(), 1u);
  // a node that died holding it: the member expires with its lease, renewing keeps it
  queue.renew_running({{b[0].tenant, b[0].lane, b[0].entry_id}}, 40ms);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(queue.running_count("t"), 0u);
  auto c = queue.read_new("node-a", {{"t", 3}}, 30s, 5000ms);
  ASSERT_EQ(c.size(), 1u);
  // the default cap applies to tenants without their own; -1 removes a cap
  queue.set_cap("*", 2);
  queue.set_cap("t", -1);
  EXPECT_EQ(queue.caps(), (std::map<std::string, long long>{{"*", 2}}));
  EXPECT_EQ(queue.read_new("node-a", {{"t", 3}}, 30s, 5000ms).size(), 1u);  // 2 running now
  EXPECT_TRUE(queue.read_new("node-a", {{"t", 3}}, 30s, 5000ms).empty());
  // without cap enforcement (cap_lease 0) read_new ignores caps
  EXPECT_EQ(queue.read_new("node-a", {{"t", 3}}, 30s, 0ms).size(), 1u);
}

}  // namespace
