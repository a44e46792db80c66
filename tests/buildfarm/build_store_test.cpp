// RedisBuildStore against a real redis-server: one build per key cluster-wide, waiting for a live
// builder, taking over an expired lease, verification on fetch, cluster caps, tenant users refused.
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "buildfarm/artifact.h"
#include "buildfarm/redis_build_store.h"
#include "redis_server.h"

namespace kj::buildfarm {
namespace {
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using kjqueue::Keys;

class BuildStoreTest : public ::testing::Test {
 protected:
  Config config(const std::string& node, std::chrono::milliseconds lease = 1000ms) {
    Config c;
    c.node = node;
    c.redis.url = redis.url();
    c.build.lease = lease;
    c.workers = 2;
    return c;
  }
  ClaimRequest now(const std::string& key, const std::string& tenant = "t1") {
    return {key, tenant, Clock::now(), std::nullopt, -1};
  }
  SharedBuild built(const std::string& key) {
    SharedBuild b;
    b.key = key;
    b.memo = {{"extensions", nlohmann::json::array()}};
    return b;
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
  void SetUp() override { q.load_functions(); }
};

TEST_F(BuildStoreTest, OneLeasePerKeyThenTheArtifactForEveryone) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Judge);
  EXPECT_EQ(a.claim(now("k1")).kind, BuildClaim::Leased);
  EXPECT_TRUE(b.taken("k1"));
  EXPECT_EQ(b.claim(now("k1")).kind, BuildClaim::Busy);  // a builds it; b may not wait here
  a.publish(built("k1"));
  auto got = b.claim(now("k1"));
  ASSERT_EQ(got.kind, BuildClaim::Artifact);
  EXPECT_EQ(got.artifact->builder, "a");
  EXPECT_FALSE(q.command({"GET", Keys::build_lease(0, "k1")}).front());  // released
  EXPECT_GT(std::stoll(*q.command({"PTTL", Keys::artifact(0, "k1")}).front()), 0);  // expires
}

TEST_F(BuildStoreTest, AJudgeWaitsForALiveBuilderAndTakesItsArtifact) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Judge);
  ASSERT_EQ(a.claim(now("k2")).kind, BuildClaim::Leased);
  std::thread builder([&] {
    std::this_thread::sleep_for(600ms);
    a.publish(built("k2"));
  });
  ClaimRequest req = now("k2");
  req.wait_until = Clock::now() + 10s;
  const auto got = b.claim(req);
  builder.join();
  EXPECT_EQ(got.kind, BuildClaim::Artifact);
  EXPECT_GE(got.waited_s, 0.5);
}

TEST_F(BuildStoreTest, ALeaseNotRenewedExpiresAndAnotherBuilderTakesOver) {
  RedisBuildStore dead(config("dead", 400ms), RedisBuildStore::Role::Build);
  RedisBuildStore judge(config("judge"), RedisBuildStore::Role::Judge);
  ASSERT_EQ(dead.claim(now("k3")).kind, BuildClaim::Leased);  // then never renewed: its node "died"
  ClaimRequest req = now("k3");
  req.wait_until = Clock::now() + 10s;
  const auto t0 = Clock::now();
  EXPECT_EQ(judge.claim(req).kind, BuildClaim::Leased);
  EXPECT_GE(Clock::now() - t0, 300ms);
}

TEST_F(BuildStoreTest, AWaitEndsOnTheJobsCancelOrDeadline) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Judge);
  ASSERT_EQ(a.claim(now("w1")).kind, BuildClaim::Leased);
  ClaimRequest req = now("w1");
  req.wait_until = Clock::now() + 30s;
  req.deadline = std::chrono::system_clock::now() + 300ms;
  auto t0 = Clock::now();
  EXPECT_EQ(b.claim(req).kind, BuildClaim::Expired);
  EXPECT_LT(Clock::now() - t0, 5s);
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  });
  req = now("w1");
  req.wait_until = Clock::now() + 30s;
  req.cancel_fd = fd;
  t0 = Clock::now();
  EXPECT_EQ(b.claim(req).kind, BuildClaim::Cancelled);
  EXPECT_LT(Clock::now() - t0, 5s);
  canceller.join();
  ::close(fd);
}

TEST_F(BuildStoreTest, RenewedLeasesOutliveTheirTtl) {
  RedisBuildStore a(config("a", 400ms), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Build);
  ASSERT_EQ(a.claim(now("k4")).kind, BuildClaim::Leased);
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(120ms);
    a.renew_held();
  }
  EXPECT_EQ(b.claim(now("k4")).kind, BuildClaim::Busy);
}

TEST_F(BuildStoreTest, ACorruptArtifactIsDiscardedAndRebuiltNeverUsed) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Judge);
  ASSERT_EQ(a.claim(now("k5")).kind, BuildClaim::Leased);
  a.publish(built("k5"));
  std::string v = *q.command({"GET", Keys::artifact(0, "k5")}).front();
  v[v.size() - 2] ^= 1;
  q.command({"SET", Keys::artifact(0, "k5"), v});
  EXPECT_EQ(b.claim(now("k5")).kind, BuildClaim::Leased);  // b builds it itself
  EXPECT_EQ(q.command({"EXISTS", Keys::artifact(0, "k5")}).front(), "0");
  // an artifact stored under another key's name is refused too
  a.publish(built("other"));
  q.command({"RENAME", Keys::artifact(0, "other"), Keys::artifact(0, "k6")});
  EXPECT_EQ(a.claim(now("k6")).kind, BuildClaim::Leased);
}

TEST_F(BuildStoreTest, AnArtifactOverTheBoundIsNotShared) {
  Config c = config("a");
  c.build.artifact_max_bytes = 2048;
  RedisBuildStore a(c, RedisBuildStore::Role::Build);
  ASSERT_EQ(a.claim(now("k7")).kind, BuildClaim::Leased);
  SharedBuild big = built("k7");
  big.files.push_back({"0123456789abcdef0123456789abcdef/x.so", std::string(4096, 'x')});
  a.publish(big);
  EXPECT_EQ(q.command({"EXISTS", Keys::artifact(0, "k7"), Keys::build_lease(0, "k7")}).front(), "0");
}

TEST_F(BuildStoreTest, TheClusterCapBoundsATenantsBuildsOnBuildNodes) {
  q.set_cap("t1", 1);
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Build);
  EXPECT_EQ(a.claim(now("c1")).kind, BuildClaim::Leased);
  EXPECT_EQ(b.claim(now("c2")).kind, BuildClaim::Busy);        // capped
  EXPECT_EQ(b.claim(now("c3", "t2")).kind, BuildClaim::Leased);  // another tenant is not
  a.release("c1");
  EXPECT_EQ(b.claim(now("c2")).kind, BuildClaim::Leased);
}

TEST_F(BuildStoreTest, AJudgePastItsLocalBuildsWaitsWhileABuildNodeLivesElseBuilds) {
  Config c = config("judge");
  c.build.local_max = 0;
  RedisBuildStore judge(c, RedisBuildStore::Role::Judge), builder(config("bn"), RedisBuildStore::Role::Build);
  builder.announce_builder(10s);
  EXPECT_EQ(judge.claim(now("l1")).kind, BuildClaim::Busy);  // leaves it to the build node
  ClaimRequest native = now("n1");
  native.build_nodes_build_it = false;  // a native build: no build node makes it, so never wait for one
  EXPECT_EQ(judge.claim(native).kind, BuildClaim::Leased);
  builder.withdraw_builder();
  EXPECT_EQ(judge.claim(now("l1")).kind, BuildClaim::Leased);  // no build node alive: builds itself
}

// local_max is a bound, not a hint: slots claiming at the same moment (each with its own Redis
// round trip between the check and the lease) never get more local builds than it allows.
TEST_F(BuildStoreTest, ConcurrentClaimsNeverExceedLocalMax) {
  Config c = config("judge");
  c.workers = 16;
  c.build.local_max = 2;
  RedisBuildStore judge(c, RedisBuildStore::Role::Judge), builder(config("bn"), RedisBuildStore::Role::Build);
  builder.announce_builder(10s);
  for (int round = 0; round < 5; ++round) {
    std::atomic<int> leased{0};
    std::vector<std::thread> slots;
    for (int i = 0; i < 16; ++i)
      slots.emplace_back([&, i] {
        if (judge.claim(now(fmt::format("m{}-{}", round, i))).kind == BuildClaim::Leased) ++leased;
      });
    for (auto& t : slots) t.join();
    EXPECT_EQ(leased.load(), 2) << "round " << round;
    for (int i = 0; i < 16; ++i) judge.release(fmt::format("m{}-{}", round, i));
  }
}

TEST_F(BuildStoreTest, ATenantUserCannotTakeLeasesOrTouchArtifacts) {
  q.command({"ACL", "SETUSER", "kj-t1", "on", ">pw", "-@all", "+fcall", "+get", "+set", "%R~kj:{p0}:result:t1:*",
             "~kj:{p0}:jobs:t1"});
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build);
  ASSERT_EQ(a.claim(now("k8")).kind, BuildClaim::Leased);
  a.publish(built("k8"));
  kjqueue::Endpoint e = redis.endpoint();
  e.username = "kj-t1";
  e.password = "pw";
  kjqueue::Queue tenant(e);
  EXPECT_THROW(tenant.command({"GET", Keys::artifact(0, "k8")}), kjqueue::QueueError);
  EXPECT_THROW(tenant.command({"SET", Keys::artifact(0, "k8"), "x"}), kjqueue::QueueError);
  EXPECT_THROW(tenant.command({"FCALL", "kj_build_lease", "3", Keys::build_lease(0, "k9"), Keys::building(0, "t1"),
                               Keys::caps(0), "acquire", "me", "1000", "t1"}),
               kjqueue::QueueError);
}

}  // namespace
}  // namespace kj::buildfarm
