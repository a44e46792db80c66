// The secret seeds of a KernelBench-format job: the weights', each input set's and the timed
// loop's perturbation. Jobs of one group (same tenant, same batch_id, same problem: reference
// source, size overrides, precision, backend, mode) share them, so the trusted worker makes the
// sets and expected outputs once for the group; a new group, and every job without a batch_id,
// gets fresh ones. Never shared across tenants. The trade-off is in docs/security-model.md.
#pragma once

#include <cstdint>
#include <vector>

#include "kjudge/v1/job.pb.h"

namespace kj {

struct GroupSeeds {
  std::uint64_t weight = 0, perturb = 0;
  std::vector<std::uint64_t> sets;  // grows on demand (a job may ask for more sets than another)
  std::uint64_t set(unsigned k) const { return sets.at(k); }
  static GroupSeeds kernelbench();  // compat mode: KernelBench's own seeds (weights 42, no perturbation)
};

// The job's group's seeds (made on first use, kept for an hour after the group's last use).
GroupSeeds group_seeds(const kjudge::v1::Job& job);

}  // namespace kj
