// Job cgroups on cgroup v1/hybrid: one directory per controller hierarchy (memory, pids,
// cpuacct, freezer; cpu only for a quota or a weight), swap off through memsw, kills through the
// freezer, and a pool of idle cgroups for reuse.
#include "cgroup.h"
#include "cgroup_files.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

namespace kjsandbox {
using namespace cgroup_detail;

namespace {
// v1: idle job cgroups for reuse (JobCgroup::recycle): one mkdir/rmdir per hierarchy and the
// kernel's teardown of each were ~0.4 ms of CPU per launch.
constexpr std::size_t kPoolMax = 32;
constexpr std::uint64_t kPoolMaxResidue = 8ull << 20;
std::mutex g_pool_mu;
pid_t g_pool_owner = 0;  // a forked child must not use (or remove) its parent's pooled cgroups
// Never destroyed (threads may still recycle into it while the process exits); the idle ones are
// removed at exit by an atexit handler registered with the first.
std::vector<std::unique_ptr<JobCgroup>>& g_pool = *new std::vector<std::unique_ptr<JobCgroup>>;

// A quota or a weight needs a cgroup in the cpu hierarchy, and such a cgroup is never pooled: a
// later run that asks for neither must not inherit them (without either, cpuacct accounts).
bool needs_cpu_hierarchy(const CgroupLimits& limits) { return limits.cpu_quota || limits.cpu_weight; }

// The quota (cpu.cfs_quota_us) and the weight (cpu.shares) of a cgroup in the cpu hierarchy. The
// weight is a priority, not a limit: a cpu.shares that cannot be written is skipped.
bool configure_cpu_v1(const std::string& dir, const CgroupLimits& limits, int* err) {
  if (limits.cpu_weight)
    write_text(dir + "/cpu.shares", std::to_string(cpu_weight_in_range(*limits.cpu_weight) * 1024 / 100));
  if (!limits.cpu_quota) return true;
  const auto quota = static_cast<long long>(*limits.cpu_quota * 100000);
  return write_text(dir + "/cpu.cfs_period_us", "100000", err) &&
         write_text(dir + "/cpu.cfs_quota_us", std::to_string(std::max(1000ll, quota)), err);
}
}  // namespace

namespace cgroup_detail {
// v1: pids.current when there is a pids hierarchy (reading cgroup.procs builds a pid list that
// a kworker tears down later), else cgroup.procs.
bool v1_empty(const std::string& pids_dir, const std::string& any) {
  if (!pids_dir.empty())
    if (auto n = read_u64(pids_dir + "/pids.current")) return *n == 0;
  return procs_of(any).empty();
}

void kill_v1(const std::string& freezer, const std::string& any, const std::string& pids_dir) {
  if (v1_empty(pids_dir, any)) return;  // the usual case after init is gone: nothing to freeze
  const bool frozen = !freezer.empty() && write_text(freezer + "/freezer.state", "FROZEN");
  if (frozen)
    for (int i = 0; i < 100; ++i) {
      auto s = read_text(freezer + "/freezer.state");
      if (!s || s->rfind("FROZEN", 0) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  for (int round = 0; round < 10; ++round) {
    auto pids = procs_of(any);
    if (pids.empty()) break;
    for (pid_t p : pids) ::kill(p, SIGKILL);
    if (frozen) write_text(freezer + "/freezer.state", "THAWED");
    std::this_thread::sleep_for(std::chrono::microseconds(round ? 500 << std::min(round, 3) : 0));
  }
  if (frozen) write_text(freezer + "/freezer.state", "THAWED");
}
}  // namespace cgroup_detail

std::unique_ptr<JobCgroup> JobCgroup::create_v1(const std::string& name, const CgroupLimits& limits, std::string* error) {
  const Hierarchy& h = hierarchy();
  std::unique_ptr<JobCgroup> cg(new JobCgroup());
  int err = 0;
  // v1 without a CPU quota or weight: an idle cgroup of an earlier run, if one is pooled (see recycle()).
  if (!needs_cpu_hierarchy(limits)) {
    std::unique_ptr<JobCgroup> pooled;
    {
      std::lock_guard lock(g_pool_mu);
      if (g_pool_owner != ::getpid()) {
        for (auto& inherited : g_pool) (void)inherited.release();  // the parent's: leave them be
        g_pool.clear();
        g_pool_owner = ::getpid();
      }
      if (!g_pool.empty()) {
        pooled = std::move(g_pool.back());
        g_pool.pop_back();
      }
    }
    if (pooled) {
      std::string why;
      if (pooled->configure_v1(limits, &why)) {
        pooled->emptied_ = false;
        pooled->mem_base_ = read_u64(pooled->memory_dir_ + "/memory.usage_in_bytes").value_or(0);
        pooled->oom_base_ = pooled->oom_seen_;
        return pooled;
      }
      // (destroyed here; a fresh one below)
    }
  }
  std::set<std::string> made;
  for (const auto& [ctrl, base] : h.v1_base) {
    // A separate cpu hierarchy is only needed for a quota or a weight (cpuacct accounts): one
    // cgroup less to create, attach to and remove per job.
    if (ctrl == "cpu" && !needs_cpu_hierarchy(limits) && h.v1_base.count("cpuacct") && h.v1_base.at("cpuacct") != base)
      continue;
    const std::string dir = base + "/" + name;
    if (!made.count(dir)) {  // co-mounted controllers (cpu,cpuacct) share one directory
      if (::mkdir(dir.c_str(), 0755) != 0) return no_cgroup(error, "mkdir " + dir, errno);
      made.insert(dir);
      cg->dirs_.push_back(dir);
    }
    if (ctrl == "memory") cg->memory_dir_ = dir;
    if (ctrl == "cpuacct") cg->cpu_dir_ = dir;
    if (ctrl == "freezer") cg->freezer_dir_ = dir;
    if (ctrl == "pids") cg->pids_dir_ = dir;
    if (ctrl == "cpu" && !configure_cpu_v1(dir, limits, &err)) return no_cgroup(error, "cpu.cfs_quota_us", err);
  }
  cg->poolable_ = !needs_cpu_hierarchy(limits);
  cg->has_memsw_ = ::access((cg->memory_dir_ + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
  if (!cg->configure_v1(limits, error)) return nullptr;
  return cg;
}

// v1 limits, written only where they differ from what this cgroup has (a pooled one keeps the
// previous run's): memory with swap off (memsw = limit, raised before and lowered after the
// limit so that memsw >= limit holds throughout), pids.
bool JobCgroup::configure_v1(const CgroupLimits& limits, std::string* error) {
  int err = 0;
  auto fail = [&](const std::string& what, int e) {
    *error = "cgroup: " + what + ": " + errno_text(e);
    return false;
  };
  const std::uint64_t want = limits.memory_bytes.value_or(kUnlimited);
  if (want != mem_limit_) {
    const std::string v = want == kUnlimited ? "-1" : std::to_string(want);
    const std::string limit = memory_dir_ + "/memory.limit_in_bytes";
    const std::string memsw = memory_dir_ + "/memory.memsw.limit_in_bytes";
    if (want > mem_limit_ && has_memsw_ && !write_text(memsw, v, &err)) return fail("memory.memsw.limit_in_bytes", err);
    if (!write_text(limit, v, &err)) return fail("memory.limit_in_bytes", err);
    if (want < mem_limit_ && has_memsw_ && !write_text(memsw, v, &err)) return fail("memory.memsw.limit_in_bytes", err);
    mem_limit_ = want;
    if (!swappiness_set_) {
      write_text(memory_dir_ + "/memory.swappiness", "0");
      swappiness_set_ = true;
    }
  }
  const std::string pids = limits.pids ? std::to_string(*limits.pids) : "max";
  if (pids != pids_max_) {
    if (pids_dir_.empty()) {
      if (limits.pids) return fail("pids limit without a pids controller", ENOTSUP);
    } else if (!write_text(pids_dir_ + "/pids.max", pids, &err)) {
      return fail("pids.max", err);
    }
    pids_max_ = pids;
  }
  return true;
}

void JobCgroup::recycle(std::unique_ptr<JobCgroup> cg) {
  if (!cg || cg->v2_ || !cg->poolable_ || !cg->emptied_) return;  // the destructor removes it
  // What the run left charged (page cache it read first, dentries): a little is fine (it is
  // reclaimable and subtracted from the next run's peak); a lot goes with the cgroup, as before.
  const auto usage = read_u64(cg->memory_dir_ + "/memory.usage_in_bytes");
  if (!usage || *usage > kPoolMaxResidue) return;
  if (!write_text(cg->memory_dir_ + "/memory.max_usage_in_bytes", "0")) return;
  if (!cg->cpu_dir_.empty() && !write_text(cg->cpu_dir_ + "/cpuacct.usage", "0")) return;
  std::unique_lock lock(g_pool_mu);
  if (g_pool_owner != ::getpid() || g_pool.size() >= kPoolMax) {
    lock.unlock();
    return;  // (removed by cg's destructor)
  }
  static const bool at_exit = std::atexit([] { JobCgroup::trim_pool(); }) == 0;
  (void)at_exit;
  g_pool.push_back(std::move(cg));
}

int JobCgroup::trim_pool() {
  std::vector<std::unique_ptr<JobCgroup>> idle;
  {
    std::lock_guard lock(g_pool_mu);
    if (g_pool_owner != ::getpid()) {
      for (auto& inherited : g_pool) (void)inherited.release();
      g_pool.clear();
    }
    idle.swap(g_pool);
  }
  return static_cast<int>(idle.size());  // destroyed here: removed
}

CgroupStats JobCgroup::stats_v1() const {
  CgroupStats s;
  if (!memory_dir_.empty()) {
    // A pooled cgroup starts with what earlier runs left charged (mem_base_) and their OOM kills.
    if (auto peak = read_u64(memory_dir_ + "/memory.max_usage_in_bytes"))
      s.memory_peak = *peak > mem_base_ ? *peak - mem_base_ : 0;
    auto kills = read_key(memory_dir_ + "/memory.oom_control", "oom_kill");
    s.oom_killed = kills ? *kills > oom_base_ : false;
    if (kills) oom_seen_ = *kills;
  }
  if (!cpu_dir_.empty())
    if (auto ns = read_u64(cpu_dir_ + "/cpuacct.usage")) s.cpu_seconds = static_cast<double>(*ns) / 1e9;
  return s;
}

}  // namespace kjsandbox
