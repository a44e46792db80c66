// A job's side of the shared build store (pipeline/build/store.h), for both pipelines: claiming a
// build's content key for a job, and holding the lease until the build is published or given back.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"
#include "pipeline/build/store.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// Another node's build of the key: taken, waited for while a live builder holds its lease (at most
// the job's compile budget and a lease more; the job's cancel and deadline end the wait), or leased
// to the caller to build.
// build_nodes_build_it: as ClaimRequest's.
BuildClaim claim_for_job(BuildStore& store, const kjudge::v1::Job& job, const Config& cfg, const std::string& key,
                         std::chrono::milliseconds compile_budget, bool build_nodes_build_it = true);

// The job's deadline as a clock time (none when unset).
std::optional<std::chrono::system_clock::time_point> job_deadline(const kjudge::v1::Job& job);

// CANCELLED or EXPIRED when the job's cancel or deadline ended the wait.
std::optional<Decision> claim_ended_the_job(const BuildClaim& claim);

// A build lease the caller holds: given back if the build ends in an exception (ours: the job is
// then INFRA_ERROR), so no node waits on a lease renewed for a build that no longer runs.
struct HeldLease {
  BuildStore* store = nullptr;
  std::string key;
  BuildStore* release() { return std::exchange(store, nullptr); }  // the caller publishes or releases it now
  ~HeldLease() {
    if (store) store->release(key);
  }
  HeldLease(BuildStore* s, std::string k) : store(s), key(std::move(k)) {}
  HeldLease(const HeldLease&) = delete;
  HeldLease& operator=(const HeldLease&) = delete;
};

}  // namespace kj
