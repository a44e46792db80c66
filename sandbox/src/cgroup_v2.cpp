// Job cgroups on cgroup v2: one directory under our own (delegating) cgroup, created with
// CLONE_INTO_CGROUP in mind, memory.max with swap off and oom.group, pids.max, cpu.max, cpu.weight; kills
// through cgroup.kill.
#include "cgroup.h"
#include "cgroup_files.h"

#include "zygote.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace kjsandbox {
using namespace cgroup_detail;

namespace cgroup_detail {

bool& v2_ready() {
  static bool ready = false;  // under setup_mutex()
  return ready;
}

// "+memory +pids +cpu", as far as `dir` offers them: enabling an absent controller fails with
// ENOENT (seen on a GPU node whose cgroup offers memory and pids but not cpu).
std::string wanted_controllers(const std::string& dir) {
  const auto offered = read_text(dir + "/cgroup.controllers").value_or("");
  std::string want;
  for (const char* c : {"memory", "pids", "cpu"})
    if (offered.find(c) != std::string::npos) want += std::string(want.empty() ? "+" : " +") + c;
  return want;
}

bool delegates(const std::string& dir) {
  const auto sc = read_text(dir + "/cgroup.subtree_control").value_or("");
  return sc.find("memory") != std::string::npos && sc.find("pids") != std::string::npos;
}

// Our own cgroup must delegate the controllers to its children; it cannot while it holds
// processes (the "no internal processes" rule), so we move into a leaf first when needed.
bool prepare_v2(const Hierarchy& h, std::string* error) {
  if (v2_ready()) return true;
  const std::string want = wanted_controllers(h.v2_base);
  if (!delegates(h.v2_base)) {
    int err = 0;
    if (!write_text(h.v2_base + "/cgroup.subtree_control", want, &err)) {
      if (err != EBUSY) {
        *error = "enable controllers in " + h.v2_base + ": " + errno_text(err);
        return false;
      }
      const std::string leaf = h.v2_base + "/" + kSupervisor;
      if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
        *error = "mkdir " + leaf + ": " + errno_text(errno);
        return false;
      }
      // Every process of our cgroup that is us goes (and our zygote, if it runs already); other
      // processes there make this fail.
      int zygote = 0;
      zygote_ready(&zygote);
      if (zygote > 0) write_text(leaf + "/cgroup.procs", std::to_string(zygote));
      if (!write_text(leaf + "/cgroup.procs", std::to_string(::getpid()), &err) ||
          !write_text(h.v2_base + "/cgroup.subtree_control", want, &err)) {
        *error = "delegate controllers from " + h.v2_base + ": " + errno_text(err);
        return false;
      }
    }
  }
  v2_ready() = true;
  return true;
}

}  // namespace cgroup_detail

std::unique_ptr<JobCgroup> JobCgroup::create_v2(const std::string& name, const CgroupLimits& limits, std::string* error) {
  const Hierarchy& h = hierarchy();
  std::unique_ptr<JobCgroup> cg(new JobCgroup());
  int err = 0;
  {
    std::lock_guard lock(setup_mutex());
    if (!prepare_v2(h, error)) return nullptr;
  }
  cg->v2_ = true;
  const std::string dir = h.v2_base + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0) return no_cgroup(error, "mkdir " + dir, errno);
  cg->dirs_.push_back(dir);
  cg->memory_dir_ = cg->cpu_dir_ = cg->freezer_dir_ = cg->pids_dir_ = dir;
  cg->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cg->dir_fd_ < 0) return no_cgroup(error, "open " + dir, errno);
  if (limits.memory_bytes) {
    if (!write_text(dir + "/memory.max", std::to_string(*limits.memory_bytes), &err))
      return no_cgroup(error, "memory.max", err);
    if (is_dir(dir) && ::access((dir + "/memory.swap.max").c_str(), F_OK) == 0 &&
        !write_text(dir + "/memory.swap.max", "0", &err))
      return no_cgroup(error, "memory.swap.max", err);
    write_text(dir + "/memory.oom.group", "1");  // an OOM kill takes the whole job
  }
  if (limits.pids && !write_text(dir + "/pids.max", std::to_string(*limits.pids), &err))
    return no_cgroup(error, "pids.max", err);
  if (limits.cpu_quota) {
    const auto quota = static_cast<long long>(*limits.cpu_quota * 100000);
    if (!write_text(dir + "/cpu.max", std::to_string(std::max(1000ll, quota)) + " 100000", &err))
      return no_cgroup(error, "cpu.max", err);
  }
  // A priority, not a limit: where the cpu controller is not ours to enable there is no cpu.weight.
  if (limits.cpu_weight) write_text(dir + "/cpu.weight", std::to_string(cpu_weight_in_range(*limits.cpu_weight)));
  return cg;
}

CgroupStats JobCgroup::stats_v2() const {
  CgroupStats s;
  s.memory_peak = read_u64(memory_dir_ + "/memory.peak");
  s.oom_killed = read_key(memory_dir_ + "/memory.events", "oom_kill").value_or(0) > 0 ||
                 read_key(memory_dir_ + "/memory.events", "oom_group_kill").value_or(0) > 0;
  if (auto usec = read_key(cpu_dir_ + "/cpu.stat", "usage_usec")) s.cpu_seconds = static_cast<double>(*usec) / 1e6;
  return s;
}

void JobCgroup::kill_v2() {
  if (write_text(dirs_[0] + "/cgroup.kill", "1")) return;
  write_text(dirs_[0] + "/cgroup.freeze", "1");
  for (int round = 0; round < 10 && !procs_of(dirs_[0]).empty(); ++round)
    for (pid_t p : procs_of(dirs_[0])) ::kill(p, SIGKILL);
  write_text(dirs_[0] + "/cgroup.freeze", "0");
}

bool JobCgroup::empty_v2() const {
  auto ev = read_text(dirs_[0] + "/cgroup.events");
  return ev && ev->find("populated 0") != std::string::npos;
}

}  // namespace kjsandbox
