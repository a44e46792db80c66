#include "pipeline/worker/worker_lender.h"

#include <chrono>
#include <string>

#include "common/log.h"

namespace kj {
namespace {
constexpr std::chrono::seconds kAnswerWithin{5};  // the worker answers at once; this is for a stuck one
}

std::uint64_t WorkerLender::borrow(std::uint64_t bytes) {
  std::string why;
  const auto reply = worker_->request({{"op", "lend"}, {"bytes", bytes}}, kAnswerWithin, &why);
  if (!reply || !reply->value("ok", false)) return 0;
  const auto loan = reply->find("loan");
  return loan != reply->end() && loan->is_number_unsigned() ? loan->get<std::uint64_t>() : 0;
}

void WorkerLender::repay(std::uint64_t loan) {
  std::string why;
  if (!worker_->request({{"op", "repay"}, {"loan", loan}}, kAnswerWithin, &why) && worker_->alive())
    log::warn("kernelbench.repay_failed", {{"loan", loan}, {"why", why}});
}

}  // namespace kj
