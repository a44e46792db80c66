#include "pipeline/worker/device_budget.h"

namespace kj {

DeviceBudget::Hold::~Hold() {
  if (!budget_) return;
  {
    std::lock_guard lock(budget_->mu_);
    budget_->held_ -= bytes_;
    --budget_->holders_;
    if (alone_) budget_->alone_ = false;
    if (passed_head_ && passed_head_ == budget_->head_turn_) budget_->passed_bytes_ -= bytes_;
  }
  budget_->cv_.notify_all();
}

// A candidate passing `head` (which does not fit yet, so some hold is out): within the head's
// window, fitting now, and leaving the head its room once the holds out when it became the head
// end (what passed it counted).
bool DeviceBudget::may_pass(const Waiter& head, const Waiter& w) const {
  if (head.backfill_seconds <= 0 || fits(head) || head.bytes > head.capacity) return false;
  const double head_waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - head_since_).count();
  if (head_waited >= head.backfill_seconds) return false;
  return fits(w) && passed_bytes_ + w.bytes + head.bytes <= head.capacity;
}

// The head when it fits; else, while the head may be passed, the earliest caller that may pass it.
bool DeviceBudget::admissible(std::uint64_t ticket) const {
  if (alone_ || alone_waiting_) return false;
  const Waiter& head = waiting_.at(head_);
  if (ticket == head_) return fits(head);
  for (const auto& [t, w] : waiting_)
    if (t != head_ && may_pass(head, w)) return t == ticket;
  return false;
}

std::uint64_t DeviceBudget::admit(std::uint64_t ticket) {
  const Waiter w = waiting_.at(ticket);
  const bool was_head = ticket == head_;
  waiting_.erase(ticket);
  held_ += w.bytes;
  ++holders_;
  if (!was_head) {
    passed_bytes_ += w.bytes;
    return head_turn_;
  }
  choose_head();  // the next head (if any), which nothing has passed yet
  return 0;
}

void DeviceBudget::choose_head() {
  if (waiting_.empty()) return;
  auto head = waiting_.begin();  // the earliest
  if (largest_first_)
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (it->second.bytes > head->second.bytes) head = it;  // strictly larger: ties stay by arrival
  if (head->first == head_) return;
  head_ = head->first;
  start_head_turn();
}

void DeviceBudget::start_head_turn() {
  ++head_turn_;
  head_since_ = std::chrono::steady_clock::now();
  passed_bytes_ = 0;
}

DeviceBudget::Hold DeviceBudget::acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited,
                                         double backfill_seconds, bool largest_first) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  largest_first_ = largest_first;
  waiting_.emplace(ticket, Waiter{bytes, capacity, backfill_seconds});
  choose_head();  // the first waiter, or (largest first) one larger than the head
  cv_.wait(lock, [&] { return admissible(ticket); });
  const std::uint64_t passed_head = admit(ticket);
  lock.unlock();
  cv_.notify_all();
  if (waited) *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Hold(this, bytes, false, passed_head);
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

std::size_t DeviceBudget::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_.size() + alone_waiting_;
}

DeviceBudget& device_budget(int gpu) {
  static std::mutex mu;
  static std::map<int, DeviceBudget> budgets;  // node-lived; std::map keeps references stable
  std::lock_guard lock(mu);
  return budgets[gpu];
}

}  // namespace kj
