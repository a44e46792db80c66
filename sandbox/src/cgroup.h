// Parent side: the job's cgroup (v2, or v1/hybrid with one directory per controller). Each
// hierarchy's own code is in cgroup_v1.cpp / cgroup_v2.cpp, the start-up in cgroup_setup.cpp.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjsandbox/policy.h"

namespace kjsandbox {

struct CgroupStats {
  std::optional<std::uint64_t> memory_peak;
  bool oom_killed = false;
  std::optional<double> cpu_seconds;
};

// CgroupLimits::cpu_weight within cgroup v2's range (1..10000); v1's cpu.shares is derived from it.
inline std::uint32_t cpu_weight_in_range(std::uint32_t weight) { return std::clamp(weight, 1u, 10000u); }

class JobCgroup {
 public:
  // nullptr and empty `error` when the host has no usable cgroup hierarchy; nullptr with
  // `error` when it has one and creating or configuring the job cgroup failed.
  static std::unique_ptr<JobCgroup> create(const CgroupLimits& limits, std::string* error);
  ~JobCgroup();  // kills what is left and removes the cgroup(s)

  bool v2() const { return v2_; }
  int clone_into_fd() const { return v2_ ? dir_fd_ : -1; }  // for CLONE_INTO_CGROUP
  bool attach(pid_t pid, std::string* error);  // moves a process in (v1; v2 without CLONE_INTO_CGROUP)
  CgroupStats stats() const;
  void kill_all();  // cgroup.kill (v2) or freeze + SIGKILL + thaw (v1)
  void reaped();    // the tree's init was reaped: kill what is left, note when it is empty

  // After a run whose init was reaped: a v1 cgroup without a CPU quota or weight that is empty
  // and holds little memory is reset (peak, CPU usage) and kept for a later create(); anything
  // else is removed. trim_pool() removes the idle ones (returns how many).
  static void recycle(std::unique_ptr<JobCgroup> cg);
  static int trim_pool();

 private:
  JobCgroup() = default;
  static std::unique_ptr<JobCgroup> create_v1(const std::string& name, const CgroupLimits& limits, std::string* error);
  static std::unique_ptr<JobCgroup> create_v2(const std::string& name, const CgroupLimits& limits, std::string* error);
  CgroupStats stats_v1() const;
  CgroupStats stats_v2() const;
  void kill_v2();
  bool empty_v2() const;
  bool v2_ = false;
  bool emptied_ = false;  // seen empty after init was reaped: nothing left to kill
  // v1 settings in force (pooled cgroups keep them) and what earlier runs left behind.
  bool configure_v1(const CgroupLimits& limits, std::string* error);
  bool poolable_ = false;
  bool has_memsw_ = false;
  bool swappiness_set_ = false;
  std::uint64_t mem_limit_ = ~0ull;
  std::string pids_max_ = "max";
  std::uint64_t mem_base_ = 0;   // memory.usage_in_bytes when this run got it
  std::uint64_t oom_base_ = 0;   // oom_kill count when this run got it
  mutable std::uint64_t oom_seen_ = 0;
  int dir_fd_ = -1;
  std::vector<std::string> dirs_;  // v2: one; v1: one per controller hierarchy
  std::string memory_dir_, cpu_dir_, freezer_dir_, pids_dir_;
};

}  // namespace kjsandbox
