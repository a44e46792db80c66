#include "gateway/connection_budget.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace kj::gateway {
namespace {

using Phase = ConnectionBudget::Phase;
using Promotion = ConnectionBudget::Promotion;

// A connected pair: the budget holds one end; the other end reads EOF once the budget shut it down.
struct Pair {
  int ours = -1, theirs = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ours = fds[0];
    theirs = fds[1];
  }
  ~Pair() {
    ::close(ours);
    ::close(theirs);
  }
  bool shut_down() const {
    char c;
    return ::recv(theirs, &c, 1, MSG_DONTWAIT) == 0;
  }
};

GatewayConfig small() {
  GatewayConfig c;
  c.max_connections = 3;
  c.max_pending_connections = 3;
  c.max_pending_per_address = 2;
  c.defaults.max_connections = 2;
  c.header_timeout = std::chrono::milliseconds(30);
  c.send_timeout = std::chrono::milliseconds(30);
  return c;
}

TEST(ConnectionBudget, APendingNewcomerDisplacesTheOldestPendingOneOfItsAddressThenOfAll) {
  const auto config = small();
  ConnectionBudget budget(config);
  std::vector<Pair> p(5);
  EXPECT_EQ(budget.admit(p[0].ours, "a").fd, -1);
  EXPECT_EQ(budget.admit(p[1].ours, "a").fd, -1);
  const auto d = budget.admit(p[2].ours, "a");  // a third from "a": its oldest goes
  EXPECT_EQ(d.fd, p[0].ours);
  EXPECT_STREQ(d.reason, "pending_address_displaced");
  EXPECT_TRUE(p[0].shut_down());
  EXPECT_FALSE(budget.enter(p[0].ours, Phase::Body));  // its thread learns it must close
  EXPECT_EQ(budget.admit(p[3].ours, "b").fd, -1);  // "a" has 2, "b" 1: the budget of 3 is full
  EXPECT_EQ(budget.admit(p[4].ours, "c").fd, p[1].ours);
  EXPECT_EQ(budget.pending(), 3u);
  EXPECT_FALSE(p[2].shut_down());
}

TEST(ConnectionBudget, AClientWhoseHeadWaitsUnreadIsNotTheOneDisplaced) {
  const auto config = small();
  ConnectionBudget budget(config);
  std::vector<Pair> p(4);
  for (int i = 0; i < 3; ++i) budget.admit(p[i].ours, "a" + std::to_string(i));
  ASSERT_EQ(::send(p[0].theirs, "GET / HTTP/1.1\r\n", 16, 0), 16);  // its thread has not read it yet
  EXPECT_EQ(budget.admit(p[3].ours, "b").fd, p[1].ours);  // the oldest with nothing waiting goes
  EXPECT_FALSE(p[0].shut_down());
}

TEST(ConnectionBudget, AuthenticatedConnectionsLeaveThePendingBudgetAndHaveCapsOfTheirOwn) {
  const auto config = small();
  ConnectionBudget budget(config);
  std::vector<Pair> p(6);
  for (int i = 0; i < 3; ++i) budget.admit(p[i].ours, "a" + std::to_string(i));
  EXPECT_EQ(budget.promote(p[0].ours, "t1"), Promotion::Ok);
  EXPECT_EQ(budget.promote(p[1].ours, "t1"), Promotion::Ok);
  EXPECT_EQ(budget.promote(p[2].ours, "t1"), Promotion::TenantFull);  // t1's cap is 2
  EXPECT_EQ(budget.pending(), 1u);
  // strangers come and go (the third from "x" displaces the first); the tenant's are never displaced
  for (int i = 3; i < 6; ++i) budget.admit(p[i].ours, "x");
  EXPECT_TRUE(p[3].shut_down());
  EXPECT_EQ(budget.promote(p[3].ours, "t2"), Promotion::Evicted);
  EXPECT_FALSE(p[0].shut_down());
  EXPECT_FALSE(p[1].shut_down());
  EXPECT_TRUE(budget.enter(p[0].ours, Phase::Head));
  EXPECT_EQ(budget.promote(p[4].ours, "t2"), Promotion::Ok);
  EXPECT_EQ(budget.promote(p[5].ours, "t3"), Promotion::Full);  // 3 authenticated in all
  budget.forget(p[0].ours);
  EXPECT_EQ(budget.promote(p[5].ours, "t3"), Promotion::Ok);
}

TEST(ConnectionBudget, PhasesPastTheirDeadlineAreShutDownButHandlingHasNone) {
  const auto config = small();
  ConnectionBudget budget(config);
  std::vector<Pair> p(3);
  for (auto& x : p) budget.admit(x.ours, "a" + std::to_string(x.ours));
  EXPECT_TRUE(budget.enter(p[1].ours, Phase::Handling));
  EXPECT_TRUE(budget.enter(p[2].ours, Phase::Writing));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  auto overdue = budget.overdue(ConnectionBudget::Clock::now());
  ASSERT_EQ(overdue.size(), 2u);
  EXPECT_TRUE(p[0].shut_down());
  EXPECT_FALSE(p[1].shut_down());
  EXPECT_TRUE(p[2].shut_down());
  for (const auto& o : overdue)
    EXPECT_STREQ(o.reason, o.fd == p[0].ours ? "header_timeout" : "send_timeout");
  EXPECT_TRUE(budget.overdue(ConnectionBudget::Clock::now()).empty());  // each once
  budget.stop();
  EXPECT_FALSE(budget.enter(p[1].ours, Phase::Head));  // stopping: no next request
  EXPECT_TRUE(budget.enter(p[1].ours, Phase::Writing));
  for (auto& x : p) budget.forget(x.ours);
  EXPECT_TRUE(budget.empty());
}

}  // namespace
}  // namespace kj::gateway
