// submit -> fetch -> complete -> get_result, idempotency, first-result-wins, malformed entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "queue_fixture.h"

using namespace std::chrono_literals;
using kjqueue::Keys;
using kjqueue::QueueError;
using kjtest::binary;
using kjtest::QueueTest;

using QueueRoundTrip = QueueTest;

TEST_F(QueueRoundTrip, BinaryPayloadSurvivesSubmitFetchCompleteGet) {
  const std::string job = binary("job"), result = binary("result");
  ASSERT_EQ(job.size(), 10u);
  auto sub = queue.submit("team-a", "job-1", job);
  EXPECT_FALSE(sub.duplicate);
  EXPECT_FALSE(sub.entry_id.empty());

  auto got = queue.fetch("node-1", 10, 500ms);
  ASSERT_EQ(got.size(), 1u);
  const auto& d = got[0];
  EXPECT_EQ(d.partition, 0);
  EXPECT_EQ(d.tenant, "team-a");
  EXPECT_EQ(d.entry_id, sub.entry_id);
  EXPECT_EQ(d.job_id, "job-1");
  ASSERT_TRUE(d.payload.has_value());
  EXPECT_EQ(*d.payload, job);
  EXPECT_EQ(d.fields.at("id"), "job-1");
  EXPECT_EQ(d.fields.at("job"), job);

  EXPECT_EQ(queue.get_result("team-a", "job-1"), std::nullopt);
  EXPECT_TRUE(queue.complete(d, "job-1", result, "OK", 60s));
  EXPECT_EQ(queue.get_result("team-a", "job-1"), result);

  const long long ttl = num({"TTL", Keys::result(0, "team-a", "job-1")});
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 60);
  // the completion event
  auto ev = queue.command({"XRANGE", Keys::done(0, "team-a"), "-", "+"});
  ASSERT_EQ(ev.size(), 5u);  // id, "id", job-1, "status", OK
  EXPECT_EQ(ev[2], "job-1");
  EXPECT_EQ(ev[4], "OK");
  // nothing left to deliver
  EXPECT_TRUE(queue.fetch("node-1", 10, 50ms).empty());
}

TEST_F(QueueRoundTrip, DuplicateSubmitReturnsFirstEntryAndEnqueuesOnce) {
  auto first = queue.submit("team-a", "job-1", "payload-1");
  auto second = queue.submit("team-a", "job-1", "payload-2");
  EXPECT_FALSE(first.duplicate);
  EXPECT_TRUE(second.duplicate);
  EXPECT_EQ(first.entry_id, second.entry_id);
  EXPECT_EQ(num({"XLEN", Keys::jobs(0, "team-a")}), 1);
  // the idempotency marker expires eventually (7 days)
  const long long ttl = num({"TTL", Keys::job_marker(0, "team-a", "job-1")});
  EXPECT_GT(ttl, 6 * 24 * 3600);
  EXPECT_LE(ttl, 7 * 24 * 3600);
  // same job id under another tenant is another job
  EXPECT_FALSE(queue.submit("team-b", "job-1", "x").duplicate);

  auto got = queue.fetch("node-1", 10, 200ms);
  ASSERT_EQ(got.size(), 2u);
}

TEST_F(QueueRoundTrip, CompleteTwiceFirstResultWinsAndEntryIsAcked) {
  queue.submit("team-a", "job-1", "p");
  auto got = queue.fetch("node-1", 10, 500ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(num({"XPENDING", Keys::jobs(0, "team-a"), Keys::kGroup}), 1);

  EXPECT_TRUE(queue.complete(got[0], "job-1", "first", "OK", 60s));
  EXPECT_FALSE(queue.complete(got[0], "job-1", "second", "INCORRECT", 60s));
  EXPECT_EQ(queue.get_result("team-a", "job-1"), "first");
  EXPECT_EQ(num({"XPENDING", Keys::jobs(0, "team-a"), Keys::kGroup}), 0);
  EXPECT_EQ(num({"XLEN", Keys::done(0, "team-a")}), 1);  // one event, for the stored result
}

TEST_F(QueueRoundTrip, SubmitRejectsInvalidNamesAndWritesNothing) {
  EXPECT_THROW(queue.submit("Team A", "job-1", "p"), QueueError);
  EXPECT_THROW(queue.submit("team-a", "job/1", "p"), QueueError);
  EXPECT_THROW(queue.submit("team-a", "", "p"), QueueError);
  EXPECT_THROW(queue.get_result("team-a", "job*"), QueueError);
  try {
    queue.submit("a:b", "job-1", "p");
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid tenant 'a:b'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(num({"DBSIZE"}), 0);
}

TEST_F(QueueRoundTrip, ServerSideFunctionsValidateToo) {
  // A client that builds its own FCALL gets the same rules.
  try {
    queue.command({"FCALL", "kj_submit", "3", Keys::jobs(0, "x"), Keys::job_marker(0, "x", "j"), Keys::tenants(0), "j",
                   "payload", "Bad Tenant"});
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("kjudge: invalid tenant"), std::string::npos) << e.what();
  }
  EXPECT_THROW(queue.command({"FCALL", "kj_complete", "3", Keys::result(0, "x", "j"), Keys::done(0, "x"),
                              Keys::jobs(0, "x"), "not-an-id", "j", "r", "OK", "60"}),
               QueueError);
  EXPECT_EQ(num({"DBSIZE"}), 0);  // validation happens before any write
}

TEST_F(QueueRoundTrip, FetchDeliversFromEveryTenant) {
  queue.submit("team-a", "a-1", "pa");
  queue.submit("team-b", "b-1", "pb");
  auto got = queue.fetch("node-1", 10, 500ms);
  ASSERT_EQ(got.size(), 2u);
  std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) { return x.tenant < y.tenant; });
  EXPECT_EQ(got[0].tenant, "team-a");
  EXPECT_EQ(got[0].job_id, "a-1");
  EXPECT_EQ(got[0].payload, "pa");
  EXPECT_EQ(got[1].tenant, "team-b");
  EXPECT_EQ(got[1].job_id, "b-1");
  EXPECT_EQ(got[1].payload, "pb");
}

TEST_F(QueueRoundTrip, FetchHonoursCountPerStream) {
  for (int i = 0; i < 5; ++i) queue.submit("team-a", "job-" + std::to_string(i), "p");
  EXPECT_EQ(queue.fetch("node-1", 2, 200ms).size(), 2u);
  EXPECT_EQ(queue.fetch("node-2", 10, 200ms).size(), 3u);
  EXPECT_TRUE(queue.fetch("node-1", 10, 0ms).empty());  // no block
}

TEST_F(QueueRoundTrip, MalformedEntriesAreDeliveredNotDropped) {
  // A tenant registered by hand whose stream was made by hand: no group yet, no kj_submit.
  queue.command({"SADD", Keys::tenants(0), "team-c"});
  const auto no_job = queue.command({"XADD", Keys::jobs(0, "team-c"), "*", "id", "bad-1"}).at(0).value();
  const auto no_id = queue.command({"XADD", Keys::jobs(0, "team-c"), "*", "junk", std::string("\0x", 2)}).at(0).value();

  auto got = queue.fetch("node-1", 10, 500ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].tenant, "team-c");
  EXPECT_EQ(got[0].entry_id, no_job);
  EXPECT_EQ(got[0].job_id, "bad-1");
  EXPECT_FALSE(got[0].payload.has_value());
  EXPECT_EQ(got[1].entry_id, no_id);
  EXPECT_EQ(got[1].job_id, "");
  EXPECT_FALSE(got[1].payload.has_value());
  EXPECT_EQ(got[1].fields.at("junk"), std::string("\0x", 2));

  // The daemon answers both with INVALID_JOB; both get acked, neither result is lost.
  EXPECT_TRUE(queue.complete(got[0], got[0].job_id, "invalid", "INVALID_JOB", 60s));
  EXPECT_TRUE(queue.complete(got[1], got[1].job_id, "invalid", "INVALID_JOB", 60s));
  EXPECT_EQ(queue.get_result("team-c", "bad-1"), "invalid");
  EXPECT_EQ(one({"GET", Keys::result(0, "team-c", "#" + no_id)}), "invalid");
  EXPECT_EQ(num({"XPENDING", Keys::jobs(0, "team-c"), Keys::kGroup}), 0);
}

TEST_F(QueueRoundTrip, FetchWithNoTenantsBlocksThenSeesNewTenant) {
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(queue.fetch("node-1", 10, 200ms).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);

  std::thread producer([ep = redis.endpoint()] {
    std::this_thread::sleep_for(150ms);
    kjqueue::Queue q(ep);
    q.submit("late", "job-1", "p");
  });
  auto got = queue.fetch("node-1", 10, 5000ms);
  producer.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tenant, "late");
}

TEST_F(QueueRoundTrip, BlockingFetchWakesOnSubmit) {
  queue.submit("team-a", "job-0", "p");
  ASSERT_EQ(queue.fetch("node-1", 10, 200ms).size(), 1u);
  std::thread producer([ep = redis.endpoint()] {
    std::this_thread::sleep_for(150ms);
    kjqueue::Queue q(ep);
    q.submit("team-a", "job-1", "p");
  });
  auto t0 = std::chrono::steady_clock::now();
  auto got = queue.fetch("node-1", 10, 5000ms);
  producer.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job_id, "job-1");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3000ms);
}

TEST_F(QueueRoundTrip, DeletedStreamIsRecreatedWithItsGroup) {
  queue.submit("team-a", "job-0", "p");
  ASSERT_EQ(queue.fetch("node-1", 10, 200ms).size(), 1u);
  queue.command({"DEL", Keys::jobs(0, "team-a")});  // group gone with it; the tenant cache is warm
  queue.command({"XADD", Keys::jobs(0, "team-a"), "*", "id", "job-1", "job", "p"});
  auto got = queue.fetch("node-1", 10, 200ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job_id, "job-1");
}

TEST_F(QueueRoundTrip, PartitionTagsEveryKey) {
  kjqueue::Queue p2(redis.endpoint(), 2);
  EXPECT_EQ(p2.partition(), 2);
  p2.submit("team-a", "job-1", "p");
  EXPECT_EQ(num({"EXISTS", "kj:{p2}:jobs:team-a"}), 1);
  EXPECT_EQ(num({"EXISTS", "kj:{p2}:job:team-a:job-1"}), 1);
  EXPECT_EQ(num({"SISMEMBER", "kj:{p2}:tenants", "team-a"}), 1);
  EXPECT_TRUE(queue.fetch("node-1", 10, 50ms).empty());  // partition 0 sees nothing
  auto got = p2.fetch("node-1", 10, 200ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].partition, 2);
  EXPECT_TRUE(p2.complete(got[0], "job-1", "r", "OK", 60s));
  EXPECT_EQ(p2.get_result("team-a", "job-1"), "r");
  EXPECT_THROW(kjqueue::Queue(redis.endpoint(), -1), QueueError);
}

TEST_F(QueueRoundTrip, ABrokenTenantKeyDoesNotStopTheOthers) {
  queue.command({"SADD", Keys::tenants(0), "broken"});
  queue.command({"SET", Keys::jobs(0, "broken"), "not a stream"});
  queue.submit("team-a", "job-1", "p");
  auto got = queue.fetch("node-1", 10, 200ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tenant, "team-a");
  try {
    queue.status();
    FAIL() << "status hid a broken key";
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("kj:{p0}:jobs:broken"), std::string::npos) << e.what();
  }
}
