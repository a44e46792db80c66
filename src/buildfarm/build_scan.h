// Where a build node finds work: the tenants' job streams themselves, read without a consumer
// group (the judging nodes' group keeps the entries). An entry needs a build when it is a valid
// KernelBench-format job with no result yet, not cancelled, before its deadline, and nobody has
// an artifact or a lease for its build's content key.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "buildfarm/redis_build_store.h"
#include "common/config.h"
#include "kjqueue/queue.h"
#include "kjudge/v1/job.pb.h"

namespace kj::buildfarm {

struct BuildWork {
  kjudge::v1::Job job;
  std::string key;     // the build's content key
  std::string entry;   // "<stream>/<entry id>"
  double score = 0;    // lane x priority_aging + time waited (ms): highest first, as kj_fetch orders
  std::string cuda_arch_list;  // what a CUDA build targets (the key includes it); empty: no CUDA
};

// What earlier passes learnt, so later ones decode less: entries that never need a build (no
// KernelBench job, a result, a cancel, a passed deadline), and each entry's content keys (one per
// CUDA architecture built for; an entry whose keys are all built or being built is skipped without
// decoding its job). Bounded.
class Settled {
 public:
  bool has(const std::string& entry) const { return done_.count(entry) > 0; }
  void add(const std::string& entry);
  std::size_t size() const { return done_.size(); }
  const std::vector<std::string>* keys_of(const std::string& entry) const;
  void remember(const std::string& entry, std::vector<std::string> keys);
  void forget_keys() { keys_.clear(); }  // the architectures built for changed

 private:
  std::set<std::string> done_;
  std::map<std::string, std::vector<std::string>> keys_;
};

// The CUDA architectures a build node builds for: its config's when set, else every distinct
// `cuda_arch_list` the live judging nodes publish in their heartbeats (sorted). Empty: CUDA
// builds are left to the judging nodes (a key nobody computes would be a build nobody takes).
std::vector<std::string> cuda_arch_lists_to_build(const Config& cfg, const std::vector<kjqueue::NodeStatus>& nodes);

// The config a CUDA build for `cuda_arch_list` runs with (the key depends on it); empty: cfg's own.
Config with_cuda_arch_list(Config cfg, const std::string& cuda_arch_list);

// At most `want` of the tenant's builds that are needed, best score first: one per entry, or for a
// CUDA job one per architecture in `cuda_arch_lists`.
std::vector<BuildWork> find_builds(kjqueue::Queue& q, RedisBuildStore& store, const Config& cfg,
                                   const std::vector<std::string>& cuda_arch_lists, const std::string& tenant,
                                   std::size_t want, Settled& settled);

}  // namespace kj::buildfarm
