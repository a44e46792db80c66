// Bytes of request bodies the gateway holds at once ([gateway] max_bodies_in_flight_bytes): a body
// is read only once its Content-Length (or, chunked, max_request_bytes) fits, so many large
// requests at once wait their turn instead of growing the process past its stated bound.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

namespace kj::gateway {

class ByteBudget {
 public:
  explicit ByteBudget(std::uint64_t capacity) : capacity_(capacity) {}

  // Returns the held bytes to the budget when it goes.
  class Held {
   public:
    Held(ByteBudget& budget, std::uint64_t bytes) : budget_(&budget), bytes_(bytes) {}
    Held(Held&& o) noexcept : budget_(std::exchange(o.budget_, nullptr)), bytes_(o.bytes_) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    Held& operator=(Held&& o) noexcept {
      if (this != &o) {
        if (budget_) budget_->release(bytes_);
        budget_ = std::exchange(o.budget_, nullptr);
        bytes_ = o.bytes_;
      }
      return *this;
    }
    ~Held() {
      if (budget_) budget_->release(bytes_);
    }

   private:
    ByteBudget* budget_;
    std::uint64_t bytes_;
  };

  // Waits until `bytes` fit (at most until `deadline`); nullopt when they did not in time.
  std::optional<Held> acquire(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline) {
    bytes = std::min(bytes, capacity_);  // one body larger than the budget runs alone
    std::unique_lock lock(mutex_);
    if (!freed_.wait_until(lock, deadline, [&] { return used_ + bytes <= capacity_; })) return std::nullopt;
    used_ += bytes;
    return std::optional<Held>(std::in_place, *this, bytes);
  }

 private:
  void release(std::uint64_t bytes) {
    {
      std::lock_guard lock(mutex_);
      used_ -= bytes;
    }
    freed_.notify_all();
  }

  const std::uint64_t capacity_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::uint64_t used_ = 0;
};

}  // namespace kj::gateway
