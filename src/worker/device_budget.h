// Device memory admission for candidates: a KernelBench-format candidate holds copies of its
// inputs, its outputs and its timing pool on the GPU, so many large jobs started together run
// the device out of memory and a candidate that did nothing wrong fails. kjudged admits a
// candidate only when its estimate fits beside those already running (one too large for the
// whole budget runs alone); the wait is the node's, never counted against the candidate's limit.
// Candidates are admitted in arrival order: a large one at the head waits for room and the
// smaller ones behind it wait for it (else a node kept full of small jobs never lets it in).
// A job retried after a fault takes the device alone (acquire_alone): whatever the estimates
// missed, its second try cannot meet the same neighbours.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kj {

class DeviceBudget {
 public:
  class Hold {
   public:
    Hold(DeviceBudget* b, std::uint64_t bytes, bool alone = false) : budget_(b), bytes_(bytes), alone_(alone) {}
    Hold(Hold&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_), alone_(o.alone_) { o.budget_ = nullptr; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    std::uint64_t bytes() const { return bytes_; }  // what the candidate was admitted with

   private:
    DeviceBudget* budget_;
    std::uint64_t bytes_;
    bool alone_;
  };

  // Blocks until every earlier caller is admitted and `bytes` fit within `capacity` beside the
  // holds outstanding; seconds waited out. Waits while a job holds or waits for the device alone.
  Hold acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited = nullptr);
  // Blocks until no other hold is out, and keeps new ones out until released; seconds waited out.
  Hold acquire_alone(double* waited = nullptr);
  std::uint64_t held() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t held_ = 0;
  std::uint64_t next_ticket_ = 0, serving_ = 0;  // acquire()'s arrival order
  unsigned holders_ = 0, alone_waiting_ = 0;
  bool alone_ = false;
};

// This process's budget for GPU `gpu` (its device minor).
DeviceBudget& device_budget(int gpu);

}  // namespace kj
