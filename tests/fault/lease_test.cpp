// The queue's reliability functions (queue/lua/kjudge.lua) against a real redis-server: leases
// (renew without a new delivery, never stealing back; hand-back), the reaper's reclaim, retries
// parked and promoted, MINID trimming below the oldest pending entry, quotas, batches, dead
// letters, cancel markers.
#include <gtest/gtest.h>

#include <thread>

#include "queue_fixture.h"

namespace {
using namespace std::chrono_literals;
using kjqueue::Keys;
using kjtest::QueueTest;

class FaultLease : public QueueTest {
 protected:
  std::uint32_t deliveries(const std::string& tenant, const std::string& entry) {
    auto r = queue.command({"XPENDING", Keys::jobs(0, tenant), Keys::kGroup, entry, entry, "1"});
    return r.size() >= 4 ? static_cast<std::uint32_t>(std::stoul(r[3].value())) : 0;
  }
  // Milliseconds since the entry was last delivered or renewed, on redis's clock.
  std::uint64_t idle_ms(const std::string& tenant, const std::string& entry) {
    auto r = queue.command({"XPENDING", Keys::jobs(0, tenant), Keys::kGroup, entry, entry, "1"});
    return r.size() >= 4 ? std::stoull(r[2].value()) : ~0ull;
  }
  std::string owner(const std::string& tenant, const std::string& entry) {
    auto r = queue.command({"XPENDING", Keys::jobs(0, tenant), Keys::kGroup, entry, entry, "1"});
    return r.size() >= 4 ? r[1].value() : "";
  }
};

TEST_F(FaultLease, RenewKeepsOwnEntriesWithoutCountingADeliveryAndNeverStealsBack) {
  queue.submit("t", "j1", "p");
  auto got = queue.read_new("c1", {{"t", 1}});
  ASSERT_EQ(got.size(), 1u);
  const auto e = got[0].entry_id;
  std::this_thread::sleep_for(50ms);
  EXPECT_GE(idle_ms("t", e), 50u);
  const auto renewed = std::chrono::steady_clock::now();
  EXPECT_TRUE(queue.renew("t", "c1", {e}, 1000ms).empty());
  EXPECT_EQ(deliveries("t", e), 1u);
  // idle was reset: no older than the renewal (+1: both clocks count whole ms), however long this
  // thread waited since (a reaper with a fixed 40 ms lease, asked here, flaked on a loaded host)
  const auto idle = idle_ms("t", e);
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - renewed);
  EXPECT_LE(idle, static_cast<std::uint64_t>(since.count()) + 1);
  std::this_thread::sleep_for(60ms);
  auto stolen = queue.reclaim("c2", 40ms, 10);
  ASSERT_EQ(stolen.size(), 1u);
  EXPECT_EQ(stolen[0].deliveries, 2u);
  EXPECT_EQ(stolen[0].job_id, "j1");
  // c1's next renewal reports the loss and leaves the entry with c2
  EXPECT_EQ(queue.renew("t", "c1", {e}, 1000ms), std::vector<std::string>{e});
  EXPECT_EQ(owner("t", e), "c2");
}

TEST_F(FaultLease, HandBackMakesEntriesClaimableAtOnce) {
  queue.submit("t", "j1", "p");
  auto got = queue.read_new("c1", {{"t", 1}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(queue.reclaim("c2", 60000ms, 10).empty());
  EXPECT_TRUE(queue.hand_back("t", "c1", {got[0].entry_id}, 60000ms).empty());
  auto taken = queue.reclaim("c2", 60000ms, 10);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].entry_id, got[0].entry_id);
  EXPECT_EQ(queue.pending_of("c2").size(), 1u);
  EXPECT_TRUE(queue.pending_of("c1").empty());
}

TEST_F(FaultLease, RetryAcksTheEntry) {
  queue.submit("t", "j1", kjtest::binary("payload"), {"b1", 0});
  auto got = queue.read_new("c1", {{"t", 1}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(queue.retry_later(got[0], "j1", 1, std::chrono::system_clock::now() + 200ms));
  EXPECT_TRUE(queue.command({"XPENDING", Keys::jobs(0, "t"), Keys::kGroup, "-", "+", "10"}).empty());
}

TEST_F(FaultLease, RetryPromotion) {
  queue.submit("t", "j1", kjtest::binary("payload"), {"b1", 0});
  queue.submit("t", "later", kjtest::binary("payload"), {"b1", 0});
  auto got = queue.read_new("c1", {{"t", 2}});
  ASSERT_EQ(got.size(), 2u);
  // one due in 150 ms, one in 10 minutes: the second is not due however slowly this test runs
  ASSERT_TRUE(queue.retry_later(got[0], "j1", 2, std::chrono::system_clock::now() + 150ms));
  ASSERT_TRUE(queue.retry_later(got[1], "later", 2, std::chrono::system_clock::now() + 10min));
  std::this_thread::sleep_for(200ms);  // at least: j1 is due
  EXPECT_EQ(queue.promote_due(), 1u);  // j1 only
  auto again = queue.read_new("c1", {{"t", 2}});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job_id, "j1");
  EXPECT_EQ(again[0].attempt, 2u);
  EXPECT_EQ(again[0].batch_id, "b1");
  EXPECT_EQ(again[0].payload, kjtest::binary("payload"));
}

TEST_F(FaultLease, TrimByMinidNeverDropsPendingOrUndeliveredEntries) {
  for (int i = 0; i < 6; ++i) queue.submit("t", "j" + std::to_string(i), "p");
  auto got = queue.read_new("c1", {{"t", 3}});
  ASSERT_EQ(got.size(), 3u);
  // j0 and j2 done, j1 still running; j3..j5 never delivered
  queue.complete(got[0], "j0", "r", "OK", 60s);
  queue.complete(got[2], "j2", "r", "OK", 60s);
  EXPECT_EQ(queue.trim(), 1u);  // only j0 (below the oldest pending, j1)
  EXPECT_EQ(num({"XLEN", Keys::jobs(0, "t")}), 5);
  queue.complete(got[1], "j1", "r", "OK", 60s);
  EXPECT_EQ(queue.trim(), 1u);  // j1; j2 is the last delivered and stays as the marker
  auto rest = queue.read_new("c1", {{"t", 10}});
  EXPECT_EQ(rest.size(), 3u);  // nothing undelivered was lost
}

TEST_F(FaultLease, QuotaRefusesExplicitlyAndFreesOnCompletion) {
  queue.set_quota("t", 2);
  queue.submit("t", "j1", "p", {});
  queue.submit("t", "j2", "p", {});
  EXPECT_THROW(queue.submit("t", "j3", "p", {}), kjqueue::QueueFull);
  EXPECT_FALSE(queue.submit("t", "j1", "p", {}).entry_id.empty());  // a duplicate is not refused
  auto got = queue.read_new("c1", {{"t", 1}});
  queue.complete(got[0], got[0].job_id, "r", "OK", 60s);
  EXPECT_NO_THROW(queue.submit("t", "j3", "p", {}));
  queue.set_quota("*", 0);
  EXPECT_THROW(queue.submit("u", "x", "p", {}), kjqueue::QueueFull);
  queue.set_quota("*", -1);
  EXPECT_NO_THROW(queue.submit("u", "x", "p", {}));
}

TEST_F(FaultLease, BatchCountsAndOneCompletionEvent) {
  for (int i = 0; i < 3; ++i) queue.submit("t", "j" + std::to_string(i), "p", {"step7", 3});
  auto got = queue.read_new("c1", {{"t", 3}});
  ASSERT_EQ(got.size(), 3u);
  for (auto& d : got) queue.complete(d, d.job_id, "r", d.job_id == "j1" ? "INCORRECT" : "OK", 60s);
  queue.complete(got[0], "j0", "r2", "OK", 60s);  // a second result: ignored, not counted
  auto b = queue.batch_status("t", "step7");
  EXPECT_EQ(b.submitted, 3u);
  EXPECT_EQ(b.completed, 3u);
  EXPECT_EQ(b.verdicts["OK"], 2u);
  EXPECT_EQ(b.verdicts["INCORRECT"], 1u);
  auto events = queue.command({"XRANGE", Keys::done(0, "t"), "-", "+"});
  EXPECT_EQ(std::count(events.begin(), events.end(), std::optional<std::string>("batch_done")), 1);
  EXPECT_EQ(one({"GET", Keys::queued(0, "t")}), "0");
}

// Groups and repair turns: a: OK at turn 0 (and again at 1), b: OK only at turn 2 (a second result
// for it ignored), c: never; a job without a group is not in the tally.
TEST_F(FaultLease, BatchTalliesRepairTurnsOfTheJobsThatNamedTheirGroup) {
  struct Done {
    const char* job;
    const char* group;
    std::uint32_t turn;
    const char* verdict;
  };
  const std::vector<Done> jobs = {{"a0", "a", 0, "OK"},           {"a1", "a", 1, "OK"},      {"b0", "b", 0, "COMPILE_ERROR"},
                                  {"b1", "b", 1, "INCORRECT"},    {"b2", "b", 2, "OK"},      {"c0", "c", 0, "INCORRECT"},
                                  {"c1", "c", 1, "RUNTIME_ERROR"}, {"plain", "", 0, "OK"}};
  for (const auto& j : jobs) queue.submit("t", j.job, "p", {"rl", 0});
  auto got = queue.read_new("c1", {{"t", jobs.size()}});
  ASSERT_EQ(got.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    kjqueue::CompleteOptions o;
    o.group = jobs[i].group;
    o.turn = jobs[i].turn;
    queue.complete(got[i], got[i].job_id, "r", jobs[i].verdict, 60s, o);
  }
  kjqueue::CompleteOptions again;
  again.group = "b";
  queue.complete(got[2], "b0", "r2", "OK", 60s, again);  // b0 already has its result: not counted
  const auto t = queue.batch_status("t", "rl").turns;
  EXPECT_EQ(t.groups, 3u);
  EXPECT_EQ(t.solved_first_turn, 1u);
  EXPECT_EQ(t.solved, 2u);
  EXPECT_EQ(t.last_turn, 2u);
  EXPECT_EQ(one({"HGET", Keys::batch_groups(0, "t", "rl"), "b"}), "2");
  EXPECT_EQ(one({"HGET", Keys::batch_groups(0, "t", "rl"), "c"}), "-1");
  EXPECT_GT(num({"TTL", Keys::batch_groups(0, "t", "rl")}), 0);
  // a batch whose jobs named no group has no tally
  EXPECT_EQ(queue.batch_status("t", "step7").turns.groups, 0u);
}

TEST_F(FaultLease, DeadLetterThenRetry) {
  queue.submit("t", "j1", "payload", {});
  auto got = queue.read_new("c1", {{"t", 1}});
  kjqueue::CompleteOptions dead;
  dead.dead_reason = "max deliveries";
  EXPECT_TRUE(queue.complete(got[0], "j1", "infra", "INFRA_ERROR", 60s, dead));
  auto dl = queue.dead_letters("t", 10);
  ASSERT_EQ(dl.size(), 1u);
  EXPECT_EQ(dl[0].job_id, "j1");
  EXPECT_EQ(dl[0].reason, "max deliveries");
  EXPECT_TRUE(queue.get_result("t", "j1").has_value());
  queue.retry_dead("t", dl[0].entry_id);
  EXPECT_FALSE(queue.get_result("t", "j1").has_value());
  EXPECT_TRUE(queue.dead_letters("t", 10).empty());
  auto again = queue.read_new("c1", {{"t", 1}});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].payload, "payload");
  EXPECT_EQ(one({"GET", Keys::queued(0, "t")}), "1");
}

TEST_F(FaultLease, CancelMarkers) {
  queue.cancel_job("t", "j1", 60s);
  queue.cancel_batch("t", "b1", 60s);
  auto c = queue.cancelled({{"t", "j1", ""}, {"t", "j2", "b1"}, {"t", "j3", "b2"}, {"t", "", ""}});
  EXPECT_EQ(c, (std::vector<bool>{true, true, false, false}));
  EXPECT_TRUE(queue.batch_status("t", "b1").cancelled);
}

}  // namespace
