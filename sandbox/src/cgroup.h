// Parent side: the job's cgroup (v2, or v1/hybrid with one directory per controller).
#pragma once

#include <sys/types.h>

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

 private:
  JobCgroup() = default;
  bool v2_ = false;
  int dir_fd_ = -1;
  std::vector<std::string> dirs_;  // v2: one; v1: one per controller hierarchy
  std::string memory_dir_, cpu_dir_, freezer_dir_, pids_dir_;
};

}  // namespace kjsandbox
