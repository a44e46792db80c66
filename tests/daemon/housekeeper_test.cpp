// The elected housekeeper (src/daemon/housekeeper.h) against a real redis-server: one holder at a
// time, a holder that stops renewing (died) replaced after its lease, a stale holder's fenced
// writes refused, the reaper's scan and the architectures' pruning done by the holder only.
#include <gtest/gtest.h>

#include <thread>

#include "daemon/housekeeper.h"
#include "redis_server.h"

namespace kj {
namespace {
using namespace std::chrono_literals;
using kjqueue::Keys;

class HousekeeperTest : public ::testing::Test {
 protected:
  void SetUp() override { q.load_functions(); }
  Config config(const std::string& node) {
    Config c;
    c.node = node;
    c.redis.url = redis.url();
    c.queue.housekeeper_lease = 600ms;
    c.queue.lease = 200ms;
    c.queue.reap_interval = 100ms;
    return c;
  }
  std::string hold(const std::string& owner, const std::string& ttl_ms = "600") {
    return q.command({"FCALL", "kj_housekeeper", "2", Keys::housekeeper(0), Keys::housekeeper_epoch(0), "hold", owner,
                      ttl_ms}).front().value_or("");
  }
  template <class F>
  static bool eventually(F cond, std::chrono::milliseconds within) {
    for (auto until = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < until;) {
      if (cond()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return cond();
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
};

TEST_F(HousekeeperTest, OneHolderAtATimeANewTokenForEachNewHolder) {
  EXPECT_EQ(hold("a/1"), "1");
  EXPECT_EQ(hold("b/1"), "0");  // a holds it
  EXPECT_EQ(hold("a/1"), "1");  // renewed, same token
  std::this_thread::sleep_for(700ms);  // a stopped renewing: its lease expired
  EXPECT_EQ(hold("b/1"), "2");
  EXPECT_EQ(hold("a/1"), "0");
  // a tenant user may not take it (ACL: no XACK)
  q.command({"ACL", "SETUSER", "tenant", "on", ">pw", "+fcall", "~*"});
  kjqueue::Endpoint e = redis.endpoint();
  e.username = "tenant";
  e.password = "pw";
  kjqueue::Queue t(e);
  EXPECT_THROW(t.command({"FCALL", "kj_housekeeper", "2", Keys::housekeeper(0), Keys::housekeeper_epoch(0), "hold",
                          "evil", "600"}),
               kjqueue::QueueError);
}

TEST_F(HousekeeperTest, AStaleHoldersFencedWritesAreRefused) {
  q.submit("t1", "j1", "payload");
  const std::uint64_t first = std::stoull(hold("a/1", "300"));
  EXPECT_NO_THROW(q.trim(kjqueue::Fence{first}));
  EXPECT_NO_THROW(q.promote_due(kjqueue::Fence{first}));
  std::this_thread::sleep_for(400ms);
  ASSERT_EQ(hold("b/1"), std::to_string(first + 1));
  EXPECT_THROW(q.trim(kjqueue::Fence{first}), kjqueue::Fenced);  // a paused "a" wakes up: refused
  q.command({"ZADD", Keys::delayed(0, "t1"), "1", "j1"});  // something parked, so promote calls kj_promote
  EXPECT_THROW(q.promote_due(kjqueue::Fence{first}), kjqueue::Fenced);
  EXPECT_NO_THROW(q.trim(kjqueue::Fence{first + 1}));
}

TEST_F(HousekeeperTest, ADeadHolderIsReplacedWithinItsLeaseAndOnlyTheHolderWorks) {
  // "dead": holds the lease and never renews it (as a SIGKILLed node); tested with real processes
  // in tests/python/daemon/test_capacity.py
  ASSERT_EQ(hold("dead/1"), "1");
  Housekeeper live(config("live"), [](std::size_t) {});
  live.start();
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(live.leading());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return live.leading(); }, 2s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // lease 600 ms + one renewal period
  EXPECT_EQ(live.token(), 2u);
  // the holder's scan for the reaper: an entry pending past the queue lease
  q.submit("t1", "j1", "payload");
  q.read_new("gone-node", {{"t1", 1}});
  ASSERT_TRUE(eventually([&] { return q.command({"HGET", Keys::reapable(0), "t1"}).front() == "1"; }, 2s));
  // expired architectures are dropped, live ones kept
  q.command({"HSET", Keys::archs(0), "old", "1 9.0", "new", "99999999999999 9.0"});
  ASSERT_TRUE(eventually([&] { return q.command({"HEXISTS", Keys::archs(0), "old"}).front() == "0"; }, 12s));
  EXPECT_EQ(q.command({"HEXISTS", Keys::archs(0), "new"}).front(), "1");
  // a second live node does not take it while the first renews; the first hands it over on stop
  Housekeeper other(config("other"), [](std::size_t) {});
  other.start();
  std::this_thread::sleep_for(800ms);
  EXPECT_TRUE(live.leading());
  EXPECT_FALSE(other.leading());
  live.stop();
  EXPECT_FALSE(live.leading());
  ASSERT_TRUE(eventually([&] { return other.leading(); }, 1s));
  EXPECT_EQ(other.token(), 3u);
  other.stop();
}

}  // namespace
}  // namespace kj
