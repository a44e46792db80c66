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
// With borrowing (kernelbench.candidate_borrow_share > 0), a head that does not fit borrows the
// shortfall from its trusted worker's preparation budget (python/kjudge_worker/candidate_loans.py):
// the worker lends only while no preparation of its waits, so in an RL step's steady state the
// candidates of the largest problems run beside others instead of waiting for the capacity. What
// is lent counts as capacity while it is out, and goes back when the candidate that borrowed it
// is done. A refused head asks again every kBorrowRetry while it waits (one that got no answer
// does not ask again), and others are admitted while it asks. One over the capacity, admitted
// alone, asks once for its excess (refused, it runs alone as without loans), so the worker keeps
// that much less cached instead of giving all of it back at every use.
// A job retried after a fault takes the device alone (acquire_alone): whatever the estimates
// missed, its second try cannot meet the same neighbours.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace kj {

// Who lends device memory beyond the candidates' capacity: the tenant's trusted worker.
class DeviceLender {
 public:
  virtual ~DeviceLender() = default;
  // A loan of `bytes`: its id, 0 when refused now (a preparation needs them, or they are out), or
  // nullopt when the lender did not answer (it is not asked again for the same candidate).
  virtual std::optional<std::uint64_t> borrow(std::uint64_t bytes) = 0;
  virtual void repay(std::uint64_t loan) = 0;
};

// What a candidate may borrow: at most `lendable` bytes out at once, from `lender` (none: no borrowing).
struct Lending {
  std::uint64_t lendable = 0;
  std::shared_ptr<DeviceLender> lender;
};

// A loan a hold carries: repaid to its lender when the hold ends.
struct DeviceLoan {
  std::uint64_t id = 0, bytes = 0;
  std::shared_ptr<DeviceLender> lender;
};

class DeviceBudget {
 public:
  static constexpr std::chrono::milliseconds kBorrowRetry{100};  // a refused head asks again after this

  class Hold {
   public:
    Hold(DeviceBudget* b, std::uint64_t bytes, bool alone = false, std::uint64_t passed_head = 0, DeviceLoan loan = {})
        : budget_(b), bytes_(bytes), alone_(alone), passed_head_(passed_head), loan_(std::move(loan)) {}
    Hold(Hold&& o) noexcept
        : budget_(o.budget_), bytes_(o.bytes_), alone_(o.alone_), passed_head_(o.passed_head_), loan_(std::move(o.loan_)) {
      o.budget_ = nullptr;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    std::uint64_t bytes() const { return bytes_; }  // what the candidate was admitted with
    bool passed_head() const { return passed_head_ != 0; }  // admitted past an earlier waiter (backfill)
    std::uint64_t borrowed() const { return loan_.bytes; }  // of its bytes, those borrowed beyond the capacity

   private:
    DeviceBudget* budget_;
    std::uint64_t bytes_;
    bool alone_;
    std::uint64_t passed_head_;  // the head it passed (its turn as head, from 1); 0: none
    DeviceLoan loan_;
  };

  // Blocks until `bytes` fit within `capacity` beside the holds outstanding and every caller
  // ahead of it (earlier, or with `largest_first` larger) is admitted, or, with
  // `backfill_seconds` > 0, until it may pass the waiting head (above); seconds waited out.
  // Waits while a job holds or waits for the device alone. The order is the node's setting: the
  // latest caller's `largest_first` applies to every waiter. As the head, it borrows what it
  // lacks from `lending` (above).
  Hold acquire(std::uint64_t bytes, std::uint64_t capacity, double* waited = nullptr, double backfill_seconds = 0,
               bool largest_first = false, const Lending& lending = {});
  // Blocks until no other hold is out, and keeps new ones out until released; seconds waited out.
  Hold acquire_alone(double* waited = nullptr);
  std::uint64_t held() const;
  // Callers of acquire() and acquire_alone() not admitted yet: each one counted has found it may
  // not go in and waits (tests order their threads on it instead of sleeping).
  std::size_t waiting() const;
  std::uint64_t borrowed() const;  // lent to the holds out (and to a head about to be admitted)

 private:
  struct Waiter {
    std::uint64_t bytes, capacity;
    double backfill_seconds;
  };
  // The capacity with what is lent: holds admitted on a loan keep it until they end.
  std::uint64_t limit(const Waiter& w) const { return w.capacity + borrowed_; }
  bool fits(const Waiter& w) const { return held_ == 0 || held_ + w.bytes <= limit(w); }
  // The head's shortfall (alone: its excess over the capacity), when borrowing it now might admit
  // it (0: no loan to ask for).
  std::uint64_t loan_to_ask(std::uint64_t ticket, const Lending& lending) const;
  // Asks `lending`'s lender for `bytes` with `lock` released: the loan, or none (`silent`: no answer).
  DeviceLoan borrow(std::unique_lock<std::mutex>& lock, std::uint64_t bytes, const Lending& lending, bool& silent);
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
  std::uint64_t borrowed_ = 0;  // lent bytes out: the holds' loans and a head's being admitted
  bool borrowing_ = false;      // a head asks its lender (the lock released): one ask at a time
};

// This process's budget for GPU `gpu` (its device minor).
DeviceBudget& device_budget(int gpu);

}  // namespace kj
