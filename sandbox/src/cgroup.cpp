// Job cgroups: the parts common to both hierarchies (cgroup_v1.cpp and cgroup_v2.cpp hold each
// one's own, cgroup_setup.cpp the start-up, cgroup_files.cpp the control files and the
// hierarchy's discovery). Names: kjsbx-<creator pid>-<n>, so a later process can tell leftovers
// of a dead one.
#include "cgroup.h"
#include "cgroup_files.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kjsandbox {
using namespace cgroup_detail;

namespace cgroup_detail {

// A job cgroup's name no directory has yet. A dead process that had this pid (pids wrap: 32768 on
// many hosts) may have left kjsbx-<pid>-<n> behind, which cleanup_stale_cgroups keeps while the pid
// is alive again: its mkdir failed with EEXIST (a sandbox test, 2026-12-07). The next n is taken.
std::string unused_job_cgroup_name(const Hierarchy& h) {
  static std::atomic<unsigned> counter{0};
  for (;;) {
    const std::string name = std::string(kPrefix) + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    bool taken = h.v2 && is_dir(h.v2_base + "/" + name);
    for (const auto& [ctrl, base] : h.v1_base) taken = taken || is_dir(base + "/" + name);
    if (!taken) return name;
  }
}

}  // namespace cgroup_detail

std::unique_ptr<JobCgroup> JobCgroup::create(const CgroupLimits& limits, std::string* error) {
  const Hierarchy& h = hierarchy();
  if (!h.usable()) return nullptr;
  const std::string name = unused_job_cgroup_name(h);
  return h.v2 ? create_v2(name, limits, error) : create_v1(name, limits, error);
}

bool JobCgroup::attach(pid_t pid, std::string* error) {
  for (const auto& dir : dirs_) {
    int err = 0;
    if (!write_text(dir + "/cgroup.procs", std::to_string(pid), &err)) {
      *error = "cgroup: attach to " + dir + ": " + errno_text(err);
      return false;
    }
  }
  return true;
}

CgroupStats JobCgroup::stats() const { return v2_ ? stats_v2() : stats_v1(); }

void JobCgroup::kill_all() {
  if (dirs_.empty() || emptied_) return;
  if (v2_) return kill_v2();
  kill_v1(freezer_dir_, memory_dir_.empty() ? dirs_[0] : memory_dir_, pids_dir_);
}

void JobCgroup::reaped() {
  // Called once the tree's init is reaped: nothing can join the cgroup any more, so one check
  // that it is empty lets kill_all() (and the destructor's) skip the work.
  if (dirs_.empty()) return;
  auto empty = [this] { return v2_ ? empty_v2() : v1_empty(pids_dir_, memory_dir_.empty() ? dirs_[0] : memory_dir_); };
  emptied_ = empty();
  if (!emptied_) {
    kill_all();
    emptied_ = empty();
  }
}

JobCgroup::~JobCgroup() {
  kill_all();
  for (const auto& dir : dirs_) remove_dir(dir);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string cgroup_mode(std::string* why) {
  const Hierarchy& h = hierarchy();
  if (why) *why = h.why;
  return h.v2 ? "v2" : h.usable() ? "v1" : "";
}

std::optional<std::uint64_t> job_cpu_ns(pid_t pid) {
  const Hierarchy& h = hierarchy();
  for (const auto& [controllers, path] : proc_cgroups(std::to_string(pid))) {
    const std::string ctrls = "," + controllers + ",";
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.rfind(kPrefix, 0) != 0 || name == kSupervisor) continue;  // not in one of our job cgroups
    if (h.v2 && ctrls == ",,") {
      const auto usec = read_key(h.v2_base + "/" + name + "/cpu.stat", "usage_usec");
      return usec ? std::optional<std::uint64_t>(*usec * 1000) : std::nullopt;
    }
    if (!h.v2 && h.v1_base.count("cpuacct") && ctrls.find(",cpuacct,") != std::string::npos)
      return read_u64(h.v1_base.at("cpuacct") + "/" + name + "/cpuacct.usage");
  }
  return std::nullopt;
}

int cleanup_stale_cgroups(std::string* log) {
  const Hierarchy& h = hierarchy();
  if (!h.usable()) return 0;
  std::lock_guard lock(setup_mutex());
  std::string error;
  if (h.v2 && !prepare_v2(h, &error) && log) *log += error + "\n";
  std::vector<std::string> bases;
  if (h.v2) bases.push_back(h.v2_base);
  for (const auto& [ctrl, base] : h.v1_base) bases.push_back(base);
  int removed = 0;
  for (const auto& base : bases) {
    DIR* d = ::opendir(base.c_str());
    if (!d) continue;
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(kPrefix, 0) != 0 || n == kSupervisor) continue;
      const pid_t owner = static_cast<pid_t>(std::atol(n.c_str() + std::strlen(kPrefix)));
      if (owner == ::getpid() || (owner > 0 && ::kill(owner, 0) == 0)) continue;  // alive
      stale.push_back(base + "/" + n);
    }
    ::closedir(d);
    for (const auto& dir : stale) {
      if (h.v2) {
        if (!write_text(dir + "/cgroup.kill", "1"))
          for (pid_t p : procs_of(dir)) ::kill(p, SIGKILL);
      } else {
        const std::string fz = h.v1_base.count("freezer") ? h.v1_base.at("freezer") + dir.substr(base.size()) : "";
        kill_v1(is_dir(fz) ? fz : "", dir);
      }
      if (remove_dir(dir)) {
        ++removed;
        if (log) *log += "removed stale cgroup " + dir + "\n";
      } else if (log) {
        *log += "cannot remove stale cgroup " + dir + ": " + errno_text(errno) + "\n";
      }
    }
  }
  return removed;
}

}  // namespace kjsandbox
