// Device memory admission for candidates: a KernelBench-format candidate holds copies of its
// inputs, its outputs and its timing pool on the GPU, so many large jobs started together run
// the device out of memory and a candidate that did nothing wrong fails. kjudged admits a
// candidate only when its estimate fits beside those already running (one too large for the
// whole budget runs alone); the wait is the node's, never counted against the candidate's limit.
// Candidates are admitted in arrival order: a large one at the head waits for room and the
// smaller ones behind it wait for it (else a node kept full of small jobs never lets it in).
// With a backfill window (kernelbench.admission_backfill_seconds), a later candidate may pass a
// head that does not fit yet, as a batch scheduler's backfill does, but only while the head has
// waited at the head of the line less than the window, and only within the head's reservation:
// what was admitted past it and still runs leaves room for the head, so the head never waits past
// the end of the holds that were out when it became the head.
// With largest-first order (kernelbench.admission_largest_first = true), the head is the largest
// waiter instead of the earliest (ties by arrival), and the same backfill lets smaller ones pass
// it: the candidates that take most of the device, a batch's critical path when memory bounds
// it, go first (longest-processing-time first), and those too large to share the device follow
// one another instead of each draining it again.
// A job retried after a fault takes the device alone (acquire_alone): whatever the estimates
// missed, its second try cannot meet the same neighbours.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace kj {

class DeviceBudget {
 public:
  class Hold {
   public:
    Hold(DeviceBudget* b, std::uint64_t bytes, bool alone = false, std::uint64_t passed_head = 0)
        : budget_(b), bytes_(bytes), alone_(alone), passed_head_(passed_head) {}
    Hold(Hold&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_), alone_(o.alone_), passed_head_(o.passed_head_) {
      o.budget_ = nullptr;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    std::uint64_t bytes() const { return bytes_; }  // what the candidate was admitted with
    bool passed_head() const { return passed_head_ != 0; }  // admitted past an earlier waiter (backfill)

   private:
    DeviceBudget* budget_;
    std::uint64_t bytes_;
    bool alone_;
    std::uint64_t passed_head_;  // the head it passed (its turn as head, from 1); 0: none
  };

  // Blocks until `bytes` fit within `capacity` beside the holds outstanding and every caller
  // ahead of it (earlier, or with `largest_first` larger) is admitted, or, with
  // `backfill_seconds` > 0, until it may pass the waiting head (above); seconds waited out.
  // Waits while a job holds or waits for the device alone. The order is the node's setting: the
  // latest caller's `largest_first` applies to every waiter.
  Hold acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited = nullptr, double backfill_seconds = 0,
               bool largest_first = false);
  // Blocks until no other hold is out, and keeps new ones out until released; seconds waited out.
  Hold acquire_alone(double* waited = nullptr);
  std::uint64_t held() const;
  // Callers of acquire() and acquire_alone() not admitted yet: each one counted has found it may
  // not go in and waits (tests order their threads on it instead of sleeping).
  std::size_t waiting() const;

 private:
  struct Waiter {
    std::uint64_t bytes, capacity;
    double backfill_seconds;
  };
  bool fits(const Waiter& w) const { return held_ == 0 || held_ + w.bytes <= w.capacity; }
  bool admissible(std::uint64_t ticket) const;
  bool may_pass(const Waiter& head, const Waiter& w) const;
  std::uint64_t admit(std::uint64_t ticket);  // the head turn it passed; 0: it was the head
  void choose_head();  // the head by the order; a new head starts its turn
  void start_head_turn();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t held_ = 0;
  std::uint64_t next_ticket_ = 0;
  std::map<std::uint64_t, Waiter> waiting_;  // acquire()'s callers not yet admitted, by arrival
  static constexpr std::uint64_t kNoHead = UINT64_MAX;
  std::uint64_t head_ = kNoHead;             // the head's ticket while waiting_ is not empty; else stale
  bool largest_first_ = false;
  std::uint64_t head_turn_ = 0;              // counts the heads: the current one's turn
  std::chrono::steady_clock::time_point head_since_;
  std::uint64_t passed_bytes_ = 0;  // held by candidates admitted past the current head
  unsigned holders_ = 0, alone_waiting_ = 0;
  bool alone_ = false;
};

// This process's budget for GPU `gpu` (its device minor).
DeviceBudget& device_budget(int gpu);

}  // namespace kj
