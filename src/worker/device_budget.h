// Device memory admission for candidates: a KernelBench-format candidate holds copies of its
// inputs, its outputs and its timing pool on the GPU, so many large jobs started together run
// the device out of memory and a candidate that did nothing wrong fails. kjudged admits a
// candidate only when its estimate fits beside those already running (one too large for the
// whole budget runs alone); the wait is the node's, never counted against the candidate's limit.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kj {

class DeviceBudget {
 public:
  class Hold {
   public:
    Hold(DeviceBudget* b, std::uint64_t bytes) : budget_(b), bytes_(bytes) {}
    Hold(Hold&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    std::uint64_t bytes() const { return bytes_; }  // what the candidate was admitted with

   private:
    DeviceBudget* budget_;
    std::uint64_t bytes_;
  };

  // Blocks until `bytes` fit within `capacity` beside the holds outstanding; seconds waited out.
  Hold acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited = nullptr);
  std::uint64_t held() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t held_ = 0;
};

// This process's budget for GPU `gpu` (its device minor).
DeviceBudget& device_budget(int gpu);

}  // namespace kj
