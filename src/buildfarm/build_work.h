// What a build node builds: the build requests kj_submit writes for each queued job while build
// nodes are announced (Keys::build_requests, read through the build nodes' own consumer group, so
// each request goes to one build node: docs/capacity-plan.md step 3), turned into builds. A request
// needs a build when its job is a valid KernelBench-format job with no result yet, not cancelled,
// before its deadline, and nobody has an artifact or a lease for its build's content key.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "buildfarm/redis_build_store.h"
#include "common/config.h"
#include "kjqueue/queue.h"
#include "kjudge/v1/job.pb.h"

namespace kj::buildfarm {

struct BuildWork {
  kjudge::v1::Job job;
  kjqueue::Delivery entry;     // the job's stream entry
  std::string key;             // the build's content key
  double score = 0;            // lane x priority_aging + time waited (ms): highest first, as kj_fetch orders
  std::string cuda_arch_list;  // what a CUDA build targets (the key includes it); empty: no CUDA
  kjqueue::BuildRequest request;
};

// The CUDA architectures a build node builds for: its config's when set, else every distinct
// TORCH_CUDA_ARCH_LIST the live judging nodes publish (kj:{pN}:archs, `<expiry ms> <list>` per
// node; expired and malformed ones are skipped), sorted. Empty: CUDA builds are left to the judging
// nodes (a key nobody computes would be a build nobody takes).
std::vector<std::string> cuda_arch_lists_to_build(const Config& cfg, const std::map<std::string, std::string>& archs,
                                                  std::int64_t now_ms);

// The config a CUDA build for `cuda_arch_list` runs with (the key depends on it); empty: cfg's own.
Config with_cuda_arch_list(Config cfg, const std::string& cuda_arch_list);

// The builds the requests need: one per request, or for a CUDA job one per architecture in
// `cuda_arch_lists`. Requests that need none (no KernelBench job, a result, a cancel, a passed
// deadline, every key built or being built, an entry gone) go to `settled`, to be acked.
std::vector<BuildWork> builds_for(kjqueue::Queue& q, RedisBuildStore& store, const Config& cfg,
                                  const std::vector<std::string>& cuda_arch_lists,
                                  const std::vector<kjqueue::BuildRequest>& requests,
                                  std::vector<kjqueue::BuildRequest>& settled);

// True when the job needs no build any more: a result, a cancel, a passed deadline.
bool build_unwanted(kjqueue::Queue& q, const kjudge::v1::Job& job, const kjqueue::Delivery& d);

// "<stream>/<id>" of a request: what a build node counts its open builds by.
std::string request_name(const kjqueue::BuildRequest& r);

}  // namespace kj::buildfarm
