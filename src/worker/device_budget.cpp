#include "worker/device_budget.h"

#include <chrono>
#include <map>

namespace kj {

DeviceBudget::Hold::~Hold() {
  if (!budget_) return;
  {
    std::lock_guard lock(budget_->mu_);
    budget_->held_ -= bytes_;
    --budget_->holders_;
    if (alone_) budget_->alone_ = false;
  }
  budget_->cv_.notify_all();
}

DeviceBudget::Hold DeviceBudget::acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  cv_.wait(lock, [&] {
    return ticket == serving_ && !alone_ && !alone_waiting_ && (held_ == 0 || held_ + bytes <= capacity);
  });
  ++serving_;  // the next in line may now try
  held_ += bytes;
  ++holders_;
  lock.unlock();
  cv_.notify_all();
  if (waited) *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Hold(this, bytes);
}

DeviceBudget::Hold DeviceBudget::acquire_alone(double* waited) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  ++alone_waiting_;
  cv_.wait(lock, [&] { return !alone_ && holders_ == 0; });
  --alone_waiting_;
  alone_ = true;
  ++holders_;
  if (waited) *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Hold(this, 0, true);
}

std::uint64_t DeviceBudget::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

DeviceBudget& device_budget(int gpu) {
  static std::mutex mu;
  static std::map<int, DeviceBudget> budgets;  // node-lived; std::map keeps references stable
  std::lock_guard lock(mu);
  return budgets[gpu];
}

}  // namespace kj
