#include "pipeline/build/claim.h"

#include "common/log.h"
#include "pipeline/run/sandbox_watch.h"

namespace kj {
namespace v1 = kjudge::v1;

std::optional<std::chrono::system_clock::time_point> job_deadline(const v1::Job& job) {
  if (!job.has_deadline() || (job.deadline().seconds() == 0 && job.deadline().nanos() == 0)) return std::nullopt;
  const auto since_epoch = std::chrono::seconds(job.deadline().seconds()) + std::chrono::nanoseconds(job.deadline().nanos());
  return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch));
}

BuildClaim claim_for_job(BuildStore& store, const v1::Job& job, const Config& cfg, const std::string& key,
                         std::chrono::milliseconds compile_budget, bool build_nodes_build_it) {
  ClaimRequest req;
  req.key = key;
  req.tenant = job.tenant();
  req.wait_until = std::chrono::steady_clock::now() + compile_budget + cfg.build.lease;
  req.deadline = job_deadline(job);
  req.cancel_fd = current_cancel_fd();
  req.build_nodes_build_it = build_nodes_build_it;
  BuildClaim claim = store.claim(req);
  if (claim.kind == BuildClaim::Busy)  // a builder kept the key (or never took it) past the wait: build here
    log::warn("build.wait_gave_up", {{"job_id", job.job_id()}, {"key", key}, {"waited_s", claim.waited_s}});
  return claim;
}

std::optional<Decision> claim_ended_the_job(const BuildClaim& claim) {
  if (claim.kind == BuildClaim::Cancelled) return ended_by_cancel("cancelled while waiting for its build");
  if (claim.kind == BuildClaim::Expired) return ended_by_deadline("deadline passed while waiting for its build");
  return std::nullopt;
}

}  // namespace kj
