// SingleFlight (common/single_flight.h): one leader per key, followers get its outcome; a leader
// that lands with nothing (or throws) leaves the work to the next caller; cancel and bound end a wait.
#include "common/single_flight.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace kj {
namespace {

using Flight = SingleFlight<int>;
using Wait = Flight::Seat::Wait;
const auto kForever = std::chrono::steady_clock::time_point::max();

TEST(SingleFlight, ConcurrentCallersOfOneKeyDoTheWorkOnce) {
  Flight flights;
  std::atomic<int> work{0}, replayed{0}, joined{0};
  auto leader = flights.join("k");
  ASSERT_TRUE(leader.leader());
  std::vector<std::thread> followers;
  for (int i = 0; i < 4; ++i)
    followers.emplace_back([&] {
      auto seat = flights.join("k");
      if (seat.leader()) return (void)++work;  // must not happen while the leader is in the air
      ++joined;
      if (seat.wait(-1, kForever) == Wait::Landed && seat.outcome() == 42) ++replayed;
    });
  while (joined < 4) std::this_thread::yield();  // all in the air before it lands
  ++work;
  leader.land(42);
  for (auto& t : followers) t.join();
  EXPECT_EQ(work, 1);
  EXPECT_EQ(replayed, 4);
}

TEST(SingleFlight, OtherKeysFlyAtOnce) {
  Flight flights;
  auto a = flights.join("a");
  auto b = flights.join("b");
  EXPECT_TRUE(a.leader());
  EXPECT_TRUE(b.leader());
}

TEST(SingleFlight, ALeaderWithNothingLeavesTheNextCallerToLead) {
  Flight flights;
  std::optional<Flight::Seat> follower;
  {
    auto leader = flights.join("k");
    follower.emplace(flights.join("k"));
    EXPECT_FALSE(follower->leader());
  }  // the leader goes away without landing (an exception in its build)
  EXPECT_EQ(follower->wait(-1, kForever), Wait::Landed);
  EXPECT_FALSE(follower->outcome().has_value());
  EXPECT_TRUE(flights.join("k").leader());  // the key is free again
}

TEST(SingleFlight, AFlightThatLandedIsNotJoined) {
  Flight flights;
  flights.join("k").land(1);
  EXPECT_TRUE(flights.join("k").leader());  // a new build (the caller looks in its memo first)
}

TEST(SingleFlight, CancelAndBoundEndAWait) {
  Flight flights;
  auto leader = flights.join("k");
  auto follower = flights.join("k");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);  // the job's cancel fd is readable once it is cancelled
  EXPECT_EQ(follower.wait(fds[0], kForever), Wait::Cancelled);
  EXPECT_EQ(follower.wait(-1, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)), Wait::TimedOut);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace kj
