// The tenant's trusted worker as the lender of its idle preparation budget to kjudged's candidates
// (device_budget.h; python/kjudge_worker/candidate_loans.py): `lend` and `repay` on its control socket.
#pragma once

#include <memory>

#include "pipeline/worker/device_budget.h"
#include "pipeline/worker/trusted_worker.h"

namespace kj {

class WorkerLender : public DeviceLender {
 public:
  explicit WorkerLender(std::shared_ptr<TrustedWorker> worker) : worker_(std::move(worker)) {}
  // A worker that does not answer: nullopt (the candidate waits for the capacity as without loans),
  // and the loan's name is repaid, so one granted late is cancelled (candidate_loans.py).
  std::optional<std::uint64_t> borrow(std::uint64_t bytes) override;
  // A worker gone meanwhile has nothing to be repaid: its budget went with it.
  void repay(std::uint64_t loan) override;

 private:
  std::shared_ptr<TrustedWorker> worker_;
};

}  // namespace kj
