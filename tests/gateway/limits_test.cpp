#include "gateway/limits.h"

#include <gtest/gtest.h>

namespace kj::gateway {
namespace {

using namespace std::chrono_literals;

TEST(TokenBucket, AllowsTheBurstThenRefillsAtTheRate) {
  const auto t0 = TokenBucket::Clock::now();
  TokenBucket bucket(10, 3, t0);
  EXPECT_TRUE(bucket.take(3, t0));
  EXPECT_FALSE(bucket.take(1, t0));
  EXPECT_FALSE(bucket.take(1, t0 + 50ms));  // half a token
  EXPECT_TRUE(bucket.take(1, t0 + 100ms));
  EXPECT_TRUE(bucket.take(3, t0 + 10s));    // capped at the burst ...
  EXPECT_FALSE(bucket.take(1, t0 + 10s));   // ... not 100 tokens
}

TEST(TokenBucket, ARefusedTakeTakesNothing) {
  const auto t0 = TokenBucket::Clock::now();
  TokenBucket bucket(1, 2, t0);
  EXPECT_FALSE(bucket.take(3, t0));
  EXPECT_TRUE(bucket.take(2, t0));
}

GatewayConfig config_with_tenant() {
  GatewayConfig c;
  c.defaults.max_job_bytes = 100;
  c.defaults.max_queued = 4;
  c.defaults.burst = 1000;
  c.defaults.max_batch_jobs = 3;
  TenantLimits big = c.defaults;
  big.max_queued = 1000;
  c.tenants["big"] = big;
  return c;
}

TEST(Admission, ChecksSizeBatchQuotaThenReserves) {
  const auto c = config_with_tenant();
  Admission a(c);
  EXPECT_EQ(a.admit("t", 1, 101), Refusal::JobTooLarge);
  EXPECT_EQ(a.admit("t", 4, 10), Refusal::BatchTooLarge);
  EXPECT_EQ(a.admit("t", 3, 100), Refusal::None);
  EXPECT_EQ(a.admit("t", 2, 10), Refusal::OverQuota);  // 3 reserved + 2 > 4: all or nothing
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::None);
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::OverQuota);
  a.release("t", 2);  // Redis took two of them as duplicates
  EXPECT_EQ(a.admit("t", 2, 10), Refusal::None);
  EXPECT_EQ(a.admit("big", 3, 10), Refusal::None);  // its own limits, its own count
}

TEST(Admission, TheRefresherReadingReplacesTheEstimate) {
  const auto c = config_with_tenant();
  Admission a(c);
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::None);
  a.written("t", 1);
  a.set_queued(a.note()[0], 4);  // Redis: 4 jobs without a result
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::OverQuota);
  a.set_queued(a.note()[0], 0);  // judged meanwhile
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::None);
  ASSERT_EQ(a.note().size(), 1u);
  EXPECT_EQ(a.note()[0].tenant, "t");
}

TEST(Admission, JobsInFlightOrAdmittedDuringAReadingStayCounted) {
  const auto c = config_with_tenant();  // max_queued 4
  Admission a(c);
  EXPECT_EQ(a.admit("t", 2, 10), Refusal::None);  // Redis not answered yet
  const auto before_read = a.note()[0];
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::None);  // while the refresher reads
  a.written("t", 3);
  a.set_queued(before_read, 0);  // the reading saw none of the three
  EXPECT_EQ(a.admit("t", 2, 10), Refusal::OverQuota);  // 3 + 2 > 4: the stale reading let none through
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::None);
}

TEST(Admission, RateLimitsPerTenant) {
  auto c = config_with_tenant();
  c.defaults.rate_per_s = 0.001;
  c.defaults.burst = 2;
  c.defaults.max_queued = 100;
  Admission a(c);
  EXPECT_EQ(a.admit("t", 2, 10), Refusal::None);
  EXPECT_EQ(a.admit("t", 1, 10), Refusal::RateLimited);
  EXPECT_EQ(a.admit("u", 1, 10), Refusal::None);  // another tenant's bucket is full
}

}  // namespace
}  // namespace kj::gateway
