#include "pipeline/worker/device_budget.h"

namespace kj {

DeviceBudget::Hold::~Hold() {
  if (!budget_) return;
  // repaid first: a head that needs the bytes again finds them at the lender once it is told
  if (loan_.id && loan_.lender) loan_.lender->repay(loan_.id);
  {
    std::lock_guard lock(budget_->mu_);
    budget_->held_ -= bytes_;
    budget_->borrowed_ -= loan_.bytes;
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
  return fits(w) && passed_bytes_ + w.bytes + head.bytes <= limit(head);
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

std::uint64_t DeviceBudget::loan_to_ask(std::uint64_t ticket, const Lending& lending) const {
  if (!lending.lender || borrowing_ || alone_ || alone_waiting_ || ticket != head_) return 0;
  const Waiter& head = waiting_.at(ticket);
  if (held_ + head.bytes <= limit(head)) return 0;  // alone (nothing held) it may still borrow its excess
  const std::uint64_t shortfall = held_ + head.bytes - limit(head);
  return borrowed_ + shortfall <= lending.lendable ? shortfall : 0;
}

DeviceLoan DeviceBudget::borrow(std::unique_lock<std::mutex>& lock, std::uint64_t bytes, const Lending& lending,
                                bool& silent) {
  borrowing_ = true;
  lock.unlock();
  std::optional<std::uint64_t> id;
  try {
    id = lending.lender->borrow(bytes);
  } catch (...) {  // the lender's own failure: as no answer
  }
  lock.lock();
  borrowing_ = false;
  cv_.notify_all();
  silent = !id;
  if (!id || !*id) return {};
  borrowed_ += bytes;
  return {*id, bytes, lending.lender};
}

DeviceBudget::Hold DeviceBudget::acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited,
                                         double backfill_seconds, bool largest_first, const Lending& lending) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  largest_first_ = largest_first;
  waiting_.emplace(ticket, Waiter{bytes, capacity, backfill_seconds});
  choose_head();  // the first waiter, or (largest first) one larger than the head
  DeviceLoan loan;  // kept if it stops being the head before it is admitted: what it borrowed counts for all
  auto next_ask = t0;
  bool asked = false, silent = false;
  for (;;) {
    // one over the capacity, admitted alone, asks once for its excess: the worker's kept cache
    // shrinks by it instead of holding the device's rest (refused: alone, as without loans)
    const bool in = admissible(ticket);
    const std::uint64_t ask = loan.id || silent || (in && asked) ? 0 : loan_to_ask(ticket, lending);
    if (in && !ask) break;
    if (ask && (in || std::chrono::steady_clock::now() >= next_ask)) {
      asked = true;
      loan = borrow(lock, ask, lending, silent);
      next_ask = std::chrono::steady_clock::now() + kBorrowRetry;
      continue;
    }
    if (ask)
      cv_.wait_until(lock, next_ask);
    else
      cv_.wait(lock);
  }
  const std::uint64_t passed_head = admit(ticket);
  lock.unlock();
  cv_.notify_all();
  if (waited) *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Hold(this, bytes, false, passed_head, std::move(loan));
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

std::uint64_t DeviceBudget::borrowed() const {
  std::lock_guard lock(mu_);
  return borrowed_;
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
