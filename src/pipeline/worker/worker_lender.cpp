#include "pipeline/worker/worker_lender.h"

#include <atomic>
#include <chrono>
#include <string>

#include "common/log.h"

namespace kj {
namespace {
constexpr std::chrono::seconds kAnswerWithin{5};  // the worker answers at once; this is for a stuck one
std::atomic<std::uint64_t> next_loan{1};           // loans are named by kjudged: unique in this process
}  // namespace

std::optional<std::uint64_t> WorkerLender::borrow(std::uint64_t bytes) {
  const std::uint64_t loan = next_loan++;
  std::string why;
  const auto reply = worker_->request({{"op", "lend"}, {"loan", loan}, {"bytes", bytes}}, kAnswerWithin, &why);
  if (reply && reply->value("ok", false)) return reply->value("lent", false) ? loan : 0;
  // no answer: it may still be granted, so its name is repaid (the worker then refuses it if late)
  repay(loan);
  return std::nullopt;
}

void WorkerLender::repay(std::uint64_t loan) {
  std::string why;
  if (!worker_->request({{"op", "repay"}, {"loan", loan}}, kAnswerWithin, &why) && worker_->alive())
    log::warn("kernelbench.repay_failed", {{"loan", loan}, {"why", why}});
}

}  // namespace kj
