#include "pipeline/job/group_seeds.h"

#include <chrono>
#include <map>
#include <mutex>

#include "pipeline/job/inputs.h"
#include "common/sha256.h"

namespace kj {
namespace v1 = kjudge::v1;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kGroupLifetime = std::chrono::hours(1);
constexpr unsigned kMaxSets = 16;  // validate_job's limit on correctness_sets
constexpr std::size_t kMaxGroups = 4096;

std::uint64_t secret_u63() { return secret_seed()[0] >> 1; }

GroupSeeds fresh() {
  GroupSeeds g;
  g.weight = secret_u63();
  g.perturb = secret_u63();
  for (unsigned k = 0; k < kMaxSets; ++k) g.sets.push_back(secret_u63());
  return g;
}

std::string group_key(const v1::Job& job) {
  const auto& t = job.kernelbench();
  std::string problem = t.reference_py();
  for (const auto& [k, v] : t.size_overrides()) problem += "\n#override " + k + "=" + std::to_string(v);
  problem += "\n#precision " + std::to_string(t.precision()) + " backend " + std::to_string(t.backend()) +
             " strictness " + std::to_string(job.options().strictness());
  return job.tenant() + "\n" + job.batch_id() + "\n" + sha256_hex(problem);
}

}  // namespace

GroupSeeds GroupSeeds::kernelbench() {
  GroupSeeds g;
  g.weight = 42;
  g.sets.assign(kMaxSets, 0);  // compat sets come from KernelBench's own seed sequence
  return g;
}

GroupSeeds group_seeds(const v1::Job& job) {
  if (job.batch_id().empty()) return fresh();
  static std::mutex mu;
  static std::map<std::string, std::pair<GroupSeeds, Clock::time_point>> groups;
  std::lock_guard lock(mu);
  const auto now = Clock::now();
  for (auto it = groups.begin(); it != groups.end();)
    it = now - it->second.second > kGroupLifetime ? groups.erase(it) : std::next(it);
  if (groups.size() >= kMaxGroups) groups.clear();  // a flood of groups: fresh seeds, nothing leaks
  auto [it, made] = groups.try_emplace(group_key(job), GroupSeeds{}, now);
  if (made) it->second.first = fresh();
  it->second.second = now;
  return it->second.first;
}

}  // namespace kj
