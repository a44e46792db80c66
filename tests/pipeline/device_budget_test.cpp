#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "pipeline/worker/device_budget.h"

namespace {
using namespace std::chrono_literals;

// Threads are ordered on what the budget says, not on sleeps: a thread counted by waiting() has
// found it may not go in. `cond` is polled until it holds; the bound only stops a broken build
// (a passing run never reaches it, however loaded the host).
template <class F>
bool eventually(F cond) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(DeviceBudget, ACandidateWaitsUntilItFitsBesideTheOthers) {
  kj::DeviceBudget b;
  auto first = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> admitted{false};
  std::thread second([&] {
    auto h = b.acquire(50, 100);  // 60 + 50 > 100: waits for the first
    admitted = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || admitted; }));
  EXPECT_FALSE(admitted);
  EXPECT_EQ(b.held(), 60u);
  first.reset();
  second.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(b.held(), 0u);
}

TEST(DeviceBudget, OneLargerThanTheWholeBudgetRunsAlone) {
  kj::DeviceBudget b;
  double waited = -1;
  { auto h = b.acquire(500, 100, &waited); EXPECT_EQ(b.held(), 500u); }
  EXPECT_GE(waited, 0.0);
  auto small = b.acquire(10, 100);
  auto other = b.acquire(20, 100);  // fits beside: no wait
  EXPECT_EQ(b.held(), 30u);
}

// Found on an H100 (rlstep, 2026-11-27): 7 GiB-input jobs failed five deliveries in 15 s on a
// device full of their neighbours' sets. A retry takes the device alone: it waits for the holds
// out, and new ones wait for it (else 16 slots refilling would never let it in).
TEST(DeviceBudget, ARetryHasTheDeviceAlone) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(1, 100));
  std::atomic<bool> alone_in{false}, later_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> alone;
  std::thread retry([&] {
    alone = std::make_unique<kj::DeviceBudget::Hold>(b.acquire_alone());
    alone_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || alone_in; }));
  EXPECT_FALSE(alone_in);  // a small hold is still out
  std::thread later([&] {
    auto h = b.acquire(1, 100);  // would fit, but the retry came first
    later_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || later_in; }));
  EXPECT_FALSE(later_in);
  running.reset();
  retry.join();
  EXPECT_TRUE(alone_in);
  EXPECT_EQ(b.waiting(), 1u);  // not while the retry runs
  EXPECT_FALSE(later_in);
  alone.reset();
  later.join();
  EXPECT_TRUE(later_in);
  EXPECT_EQ(b.held(), 0u);
}

// Found on 4 H100s (fidelity run 18, 2026-11-27): a 6 GiB-per-tensor job measured under load
// waited 13 minutes while 15 smaller jobs kept being admitted past it. Admission is in order.
TEST(DeviceBudget, ALargeJobIsNotPassedBySmallerOnesArrivingAfterIt) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> large_in{false}, small_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> large;
  std::thread large_job([&] {
    large = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(80, 100));  // waits for room
    large_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || large_in; }));
  std::thread small_job([&] {
    auto h = b.acquire(10, 100);  // would fit beside the 60, but the large job came first
    small_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || small_in; }));
  EXPECT_FALSE(large_in);
  EXPECT_FALSE(small_in);
  running.reset();
  large_job.join();
  EXPECT_TRUE(large_in);
  small_job.join();  // 80 + 10 fit: admitted right behind it
  EXPECT_TRUE(small_in);
  large.reset();
  EXPECT_EQ(b.held(), 0u);
}

// Backfill (kernelbench.admission_backfill_seconds): a later candidate passes a head that does not
// fit yet, only within the head's reservation, so the head still gets in once the hold that was
// out before it ends. On one H200 (rlstep-20261202-h200-torch-cache) 1.9 GiB matmul candidates
// waited 7 s each on average in a line with 31-33 GiB ones. (A 60 s window: the test's steps
// take milliseconds, so the head never outlives it.)
TEST(DeviceBudget, ALaterCandidatePassesAWaitingHeadOnlyWithinItsReservation) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100, nullptr, 60));
  std::atomic<bool> head_in{false}, second_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> head, second;
  std::thread head_job([&] {
    head = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(80, 100, nullptr, 60));
    head_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || head_in; }));
  std::unique_ptr<kj::DeviceBudget::Hold> passer;
  std::atomic<bool> passer_in{false};
  std::thread passer_job([&] {  // 60 + 10 fit, and 10 + 80 leave the head its room
    passer = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(10, 100, nullptr, 60));
    passer_in = true;
  });
  EXPECT_TRUE(eventually([&] { return passer_in.load(); })) << "not admitted past the head";
  std::thread second_job([&] {
    second = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(15, 100, nullptr, 60));  // 10 + 15 + 80 > 100
    second_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || second_in; }));
  EXPECT_FALSE(head_in);
  EXPECT_FALSE(second_in);  // it would fit beside 70, but not beside the head's reservation
  running.reset();          // the hold out before the head ends: 10 + 80 fit
  passer_job.join();
  EXPECT_TRUE(passer->passed_head());
  head_job.join();
  EXPECT_TRUE(head_in);
  EXPECT_FALSE(head->passed_head());
  EXPECT_EQ(b.waiting(), 1u);  // 90 + 15 > 100: now in arrival order behind the head
  EXPECT_FALSE(second_in);
  head.reset();
  second_job.join();
  EXPECT_TRUE(second_in);
  EXPECT_FALSE(second->passed_head());
  EXPECT_EQ(b.held(), 25u);
}

TEST(DeviceBudget, AHeadThatWaitedLongerThanTheWindowIsPassedByNone) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100, nullptr, 0.2));
  std::atomic<bool> head_in{false}, small_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> head;
  std::thread head_job([&] {
    head = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(80, 100, nullptr, 0.2));
    head_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || head_in; }));
  std::this_thread::sleep_for(250ms);  // the head has waited at least this: past its 0.2 s window
  std::thread small_job([&] {
    auto h = b.acquire(10, 100, nullptr, 0.2);
    EXPECT_FALSE(h.passed_head());
    small_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || small_in; }));
  EXPECT_FALSE(small_in);
  running.reset();
  head_job.join();
  small_job.join();  // 80 + 10 fit: right behind the head
  EXPECT_TRUE(head_in);
  EXPECT_TRUE(small_in);
}

TEST(DeviceBudget, AHeadThatMustRunAloneIsPassedByNone) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(10, 100, nullptr, 60));
  std::atomic<bool> head_in{false}, small_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> head;
  std::thread head_job([&] {
    head = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(500, 100, nullptr, 60));  // over the whole budget
    head_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || head_in; }));
  std::thread small_job([&] {
    auto h = b.acquire(10, 100, nullptr, 60);  // would fit beside the 10, but the head needs an empty device
    small_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || small_in; }));
  EXPECT_FALSE(small_in);
  running.reset();
  head_job.join();
  EXPECT_TRUE(head_in);
  EXPECT_EQ(b.waiting(), 1u);  // not beside the one running alone
  EXPECT_FALSE(small_in);
  head.reset();
  small_job.join();
  EXPECT_TRUE(small_in);
}

TEST(DeviceBudget, TheEarliestCandidateThatMayPassGoesFirst) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100, nullptr, 60));
  std::unique_ptr<kj::DeviceBudget::Hold> head;
  std::atomic<bool> head_in{false};
  std::thread head_job([&] {
    head = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(70, 100, nullptr, 60));
    head_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || head_in; }));
  std::atomic<int> order{0}, first_at{0}, big_at{0}, small_at{0};
  std::unique_ptr<kj::DeviceBudget::Hold> first;
  std::thread first_job([&] {  // 20 + 70 within the reservation
    first = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(20, 100, nullptr, 60));
    first_at = ++order;
  });
  ASSERT_TRUE(eventually([&] { return first_at.load() != 0; }));
  std::thread big([&] { auto h = b.acquire(15, 100, nullptr, 60); big_at = ++order; });  // 20 + 15 + 70 > 100
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || big_at.load() != 0; }));
  std::thread small([&] { auto h = b.acquire(5, 100, nullptr, 60); small_at = ++order; });  // 20 + 5 + 70 fit
  ASSERT_TRUE(eventually([&] { return small_at.load() != 0; }));
  EXPECT_EQ(first_at.load(), 1);
  EXPECT_EQ(small_at.load(), 2);  // a later one that may pass goes, while the earlier one may not
  EXPECT_EQ(big_at.load(), 0);
  running.reset();
  head_job.join();
  head.reset();
  first_job.join();
  small.join();
  big.join();
  EXPECT_EQ(big_at.load(), 3);
  EXPECT_TRUE(first->passed_head());
}

}  // namespace

// Largest first (kernelbench.admission_largest_first): the largest waiter is the head, however
// late it came; smaller ones pass it only by the backfill's rules. Modelled on the measured holds
// of one H100 (rlstep-20261208-h100-steady), its 17-25 GiB candidates were the batch's tail.
TEST(DeviceBudget, LargestFirstTheLargestWaiterGoesInBeforeAnEarlierSmallerOne) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100, nullptr, 0, true));
  std::atomic<bool> medium_in{false}, large_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> medium, large;
  std::thread medium_job([&] {  // 60 + 50 > 100: waits, the head
    medium = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(50, 100, nullptr, 0, true));
    medium_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || medium_in; }));
  std::thread large_job([&] {  // later, larger: the head now
    large = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(70, 100, nullptr, 0, true));
    large_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || large_in; }));
  running.reset();
  ASSERT_TRUE(eventually([&] { return large_in || medium_in; }));
  const bool large_first = large_in && !medium_in;  // 70 + 50 > 100: one at a time
  EXPECT_TRUE(large_first) << "the earlier, smaller one went first";
  // then the other one, whichever went first (a failure above must not hang the test)
  (large_first ? large_job : medium_job).join();
  (large_first ? large : medium).reset();
  (large_first ? medium_job : large_job).join();
  EXPECT_TRUE(medium_in && large_in);
}

TEST(DeviceBudget, InArrivalOrderALaterLargerWaiterStaysBehind) {  // the default, for contrast
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> medium_in{false}, large_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> medium, large;
  std::thread medium_job([&] {
    medium = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(50, 100));
    medium_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || medium_in; }));
  std::thread large_job([&] {
    large = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(70, 100));
    large_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || large_in; }));
  running.reset();
  medium_job.join();
  EXPECT_TRUE(medium_in);
  EXPECT_FALSE(large_in);  // 50 + 70 > 100
  medium.reset();
  large_job.join();
  EXPECT_TRUE(large_in);
}

// A smaller one still passes the largest head within its reservation, and a new larger head starts
// a turn of its own: what passed the old head counts as out before it.
TEST(DeviceBudget, LargestFirstASmallerOnePassesTheLargestHeadWithinItsReservation) {
  kj::DeviceBudget b;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(30, 100, nullptr, 60, true));
  std::atomic<bool> large_in{false};
  std::unique_ptr<kj::DeviceBudget::Hold> large;
  std::thread large_job([&] {  // 30 + 80 > 100: the head
    large = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(80, 100, nullptr, 60, true));
    large_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 1 || large_in; }));
  auto small = b.acquire(10, 100, nullptr, 60, true);  // 30 + 10 fit, 10 + 80 leave the head its room
  EXPECT_TRUE(small.passed_head());
  std::atomic<bool> other_in{false};
  std::thread other_job([&] {  // 40 + 15 fit, but 10 + 15 + 80 do not leave the head its room
    auto h = b.acquire(15, 100, nullptr, 60, true);
    other_in = true;
  });
  ASSERT_TRUE(eventually([&] { return b.waiting() == 2 || other_in; }));
  EXPECT_FALSE(other_in);
  EXPECT_FALSE(large_in);
  running.reset();  // 10 + 80 fit
  large_job.join();
  EXPECT_TRUE(large_in);
  large.reset();
  other_job.join();
  EXPECT_TRUE(other_in);
}

namespace {
// A worker's preparation budget as kjudged borrows it (python/kjudge_worker/candidate_loans.py):
// lends while `open` and it has the bytes, counts what is out and each ask.
class FakeLender : public kj::DeviceLender {
 public:
  explicit FakeLender(std::uint64_t budget) : budget_(budget) {}
  std::optional<std::uint64_t> borrow(std::uint64_t bytes) override {
    ++entered;
    while (held_up) std::this_thread::sleep_for(1ms);  // an answer that takes its time
    std::lock_guard lock(mu_);
    ++asks;
    if (throws) throw std::runtime_error("the worker's socket broke");
    if (silent) return std::nullopt;
    if (!open || out_ + bytes > budget_) return 0;
    out_ += bytes;
    loans_[++next_] = bytes;
    return next_;
  }
  void repay(std::uint64_t loan) override {
    std::lock_guard lock(mu_);
    out_ -= loans_.at(loan);
    loans_.erase(loan);
  }
  std::uint64_t out() {
    std::lock_guard lock(mu_);
    return out_;
  }
  std::atomic<bool> open{true}, throws{false}, silent{false}, held_up{false};
  std::atomic<int> asks{0}, entered{0};  // answered asks; asks begun

 private:
  std::mutex mu_;
  std::uint64_t budget_, out_ = 0, next_ = 0;
  std::map<std::uint64_t, std::uint64_t> loans_;
};

kj::Lending lending_of(std::shared_ptr<FakeLender> lender, std::uint64_t lendable) { return {lendable, std::move(lender)}; }
}  // namespace

// kernelbench.candidate_borrow_share: a head that does not fit borrows its shortfall from its
// worker's idle preparation budget instead of waiting, and repays it when it is done.
TEST(DeviceBudget, AHeadThatDoesNotFitBorrowsItsShortfallAndRepaysItWhenDone) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(40);
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> admitted{false}, done{false};
  std::thread borrowers([&] {
    auto borrower = b.acquire(50, 100, nullptr, 0, false, lending_of(lender, 40));  // 60 + 50 - 100
    auto small = b.acquire(5, 100, nullptr, 0, false, lending_of(lender, 40));      // 115 > 110: 5 more
    admitted = true;
    EXPECT_EQ(borrower.borrowed(), 10u);
    EXPECT_EQ(small.borrowed(), 5u);
    EXPECT_EQ(lender->out(), 15u);
    EXPECT_EQ(b.borrowed(), 15u);
    EXPECT_EQ(b.held(), 115u);
    while (!done) std::this_thread::sleep_for(1ms);
  });
  const bool borrowed = eventually([&] { return admitted || b.waiting() == 1; }) && admitted;
  EXPECT_TRUE(borrowed) << "the head waited for a hold to end instead of borrowing";
  if (!borrowed) running.reset();  // lets it in, so a failure does not hang
  done = true;
  borrowers.join();
  EXPECT_EQ(lender->out(), 0u);
  EXPECT_EQ(b.borrowed(), 0u);
  if (!borrowed) return;
  EXPECT_EQ(b.held(), 60u);
  auto fits = b.acquire(40, 100, nullptr, 0, false, lending_of(lender, 40));  // 100: nothing to borrow
  EXPECT_EQ(fits.borrowed(), 0u);
  EXPECT_EQ(lender->asks, 2);
}

// The worker refuses while a preparation of its waits: the head asks again (kBorrowRetry) and goes
// in once the worker lends, with no hold ending meanwhile.
TEST(DeviceBudget, ARefusedHeadAsksAgainWhileItWaits) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(40);
  lender->open = false;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> admitted{false};
  std::thread head([&] {
    auto h = b.acquire(50, 100, nullptr, 0, false, lending_of(lender, 40));
    admitted = true;
    EXPECT_EQ(h.borrowed(), 10u);
  });
  const bool asked_again = eventually([&] { return lender->asks >= 2 || admitted; });
  EXPECT_TRUE(asked_again);
  EXPECT_FALSE(admitted);
  lender->open = true;
  if (!asked_again) running.reset();  // lets it in, so a failure does not hang
  head.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(lender->out(), 0u);
}

// At most the lendable share is out at once, whatever the worker has: the head whose shortfall
// would pass it waits for a hold to end, and never asks.
TEST(DeviceBudget, NoMoreThanTheLendableShareIsBorrowed) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(1000);
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::atomic<bool> admitted{false};
  std::thread head([&] {
    auto h = b.acquire(70, 100, nullptr, 0, false, lending_of(lender, 20));  // 30 short, 20 lendable
    admitted = true;
    EXPECT_EQ(h.borrowed(), 0u);
  });
  EXPECT_TRUE(eventually([&] { return b.waiting() == 1 || admitted; }));
  std::this_thread::sleep_for(3 * kj::DeviceBudget::kBorrowRetry);
  EXPECT_FALSE(admitted);
  EXPECT_EQ(lender->asks, 0);
  running.reset();
  head.join();
  EXPECT_TRUE(admitted);
}

// A lender that does not answer (its worker stuck) or fails (its socket, a bug) is asked once:
// the head then waits for the capacity as without loans, and the budget stays usable.
TEST(DeviceBudget, ALenderThatDoesNotAnswerOrFailsIsAskedOnce) {
  for (const bool throws : {false, true}) {
    kj::DeviceBudget b;
    auto lender = std::make_shared<FakeLender>(40);
    (throws ? lender->throws : lender->silent) = true;
    auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
    std::atomic<bool> admitted{false};
    std::thread head([&] {
      auto h = b.acquire(50, 100, nullptr, 0, false, lending_of(lender, 40));
      admitted = true;
    });
    EXPECT_TRUE(eventually([&] { return lender->asks >= 1 || admitted; }));
    std::this_thread::sleep_for(3 * kj::DeviceBudget::kBorrowRetry);
    EXPECT_EQ(lender->asks, 1) << "throws " << throws;
    EXPECT_FALSE(admitted);
    running.reset();
    head.join();
    EXPECT_TRUE(admitted);
    EXPECT_EQ(b.held(), 0u);
    EXPECT_EQ(b.borrowed(), 0u);
  }
}

// While the head waits for its lender's answer, a later one that may pass it (the backfill) goes in.
TEST(DeviceBudget, OthersAreAdmittedWhileTheHeadAsksItsLender) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(40);
  lender->held_up = true;
  auto running = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100, nullptr, 60));
  std::atomic<bool> head_in{false}, small_in{false};
  std::thread head([&] {
    auto h = b.acquire(50, 100, nullptr, 60, false, lending_of(lender, 40));
    head_in = true;
  });
  EXPECT_TRUE(eventually([&] { return lender->entered >= 1 || head_in; })) << "the head did not ask";
  std::thread small([&] {
    auto h = b.acquire(30, 100, nullptr, 60);  // 60 + 30 fit, 30 + 50 leave the head its room
    small_in = true;
  });
  EXPECT_TRUE(eventually([&] { return small_in.load(); })) << "the head's ask held the line";
  EXPECT_FALSE(head_in);
  lender->held_up = false;
  small.join();
  running.reset();  // lets the head in whether or not it borrowed, so a failure does not hang
  head.join();
  EXPECT_TRUE(head_in);
}

// What holds admitted on loans keep fits the capacity with the loans still out, whichever ends
// first: a loan's hold ending takes its loan with it.
TEST(DeviceBudget, HoldsOnLoansEndInAnyOrder) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(100);
  auto a = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(60, 100));
  std::unique_ptr<kj::DeviceBudget::Hold> c, d;
  std::thread borrowers([&] {
    c = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(50, 100, nullptr, 0, false, lending_of(lender, 100)));
    d = std::make_unique<kj::DeviceBudget::Hold>(b.acquire(30, 100, nullptr, 0, false, lending_of(lender, 100)));
  });
  if (!eventually([&] { return b.held() == 140; })) a.reset();  // lets them in, so a failure does not hang
  borrowers.join();
  ASSERT_TRUE(a) << "they waited for a hold to end instead of borrowing";
  EXPECT_EQ(b.borrowed(), 40u);
  c.reset();  // 90 held, 30 lent
  EXPECT_LE(b.held(), 100 + b.borrowed());
  a.reset();
  EXPECT_LE(b.held(), 100 + b.borrowed());
  d.reset();
  EXPECT_EQ(b.borrowed(), 0u);
  EXPECT_EQ(lender->out(), 0u);
}

// One over the capacity, alone on the device, borrows its excess once; refused, it still goes in
// alone, as without loans.
TEST(DeviceBudget, OneOverTheCapacityBorrowsItsExcessOnceOrRunsAloneWithout) {
  kj::DeviceBudget b;
  auto lender = std::make_shared<FakeLender>(40);
  {
    auto big = b.acquire(120, 100, nullptr, 0, false, lending_of(lender, 40));
    EXPECT_EQ(big.borrowed(), 20u);
    EXPECT_EQ(lender->out(), 20u);
  }
  EXPECT_EQ(lender->out(), 0u);
  lender->open = false;
  const int asks = lender->asks;
  {
    auto big = b.acquire(120, 100, nullptr, 0, false, lending_of(lender, 40));
    EXPECT_EQ(big.borrowed(), 0u);
    EXPECT_EQ(lender->asks, asks + 1);  // once, not until the worker lends
  }
  auto too_big = std::make_shared<FakeLender>(1000);
  auto huge = b.acquire(200, 100, nullptr, 0, false, lending_of(too_big, 40));
  EXPECT_EQ(huge.borrowed(), 0u);  // 100 over, 40 lendable: never asked
  EXPECT_EQ(too_big->asks, 0);
}
