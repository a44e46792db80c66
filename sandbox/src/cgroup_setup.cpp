// Start-up (setup_cgroups): v2 delegation, a subtree of our own when our cgroup is shared, a probe
// that a job cgroup with memory and pids limits can be made, and the command that fixes it when not.
#include "cgroup.h"
#include "cgroup_files.h"
#include "zygote.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace kjsandbox {
using namespace cgroup_detail;

namespace {

constexpr const char* kDevPrefix = "kjudge-dev.";

bool failed(std::string* error, const std::string& what, int err) {
  *error = what + ": " + errno_text(err);
  return false;
}

// Processes in dir other than us and our zygote: a shell, its other children, a dev redis-server.
bool shared_with_others(const std::string& dir) {
  int zygote = 0;
  zygote_ready(&zygote);
  for (pid_t p : procs_of(dir))
    if (p != ::getpid() && p != zygote) return true;
  return false;
}

// A dead daemon's kjudge-dev.<pid> subtree: everything in it killed, then removed bottom-up.
void remove_tree(const std::string& dir) {
  for (const auto& sub : subdirs(dir)) remove_tree(sub);
  if (!write_text(dir + "/cgroup.kill", "1"))
    for (pid_t p : procs_of(dir)) ::kill(p, SIGKILL);
  remove_dir(dir);
}

void remove_stale_subtrees(const std::string& top) {
  for (const auto& dir : subdirs(top)) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    if (name.rfind(kDevPrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kDevPrefix)));
    if (owner > 0 && owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH) remove_tree(dir);
  }
}

// Root, v2, our cgroup shared with other processes: <top>/kjudge-dev.<pid>, with us (and our
// zygote) in its leaf kjsbx-supervisor, the job cgroups and companions (move_to_leaf) beside it.
bool make_own_subtree(Hierarchy& h, std::string* error) {
  const std::string& top = h.v2_mount;
  remove_stale_subtrees(top);
  int err = 0;
  if (!delegates(top) && !write_text(top + "/cgroup.subtree_control", wanted_controllers(top), &err))
    return failed(error, "enable memory/pids in " + top, err);
  const std::string tree = top + "/" + kDevPrefix + std::to_string(::getpid());
  const std::string leaf = tree + "/" + kSupervisor;
  for (const auto& d : {tree, leaf})
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return failed(error, "mkdir " + d, errno);
  int zygote = 0;
  zygote_ready(&zygote);
  if (zygote > 0) write_text(leaf + "/cgroup.procs", std::to_string(zygote));
  if (!write_text(leaf + "/cgroup.procs", std::to_string(::getpid()), &err))
    return failed(error, "move kjudged into " + leaf, err);
  if (!write_text(tree + "/cgroup.subtree_control", wanted_controllers(tree), &err))
    return failed(error, "enable memory/pids in " + tree, err);
  h.v2_base = tree;
  return true;
}

std::string own_command_line() {
  std::string cmd;
  const auto raw = read_text("/proc/self/cmdline").value_or("kjudged");
  std::istringstream in(raw);
  for (std::string arg; std::getline(in, arg, '\0');)
    cmd += (cmd.empty() ? "" : " ") + (arg.find_first_of(" '\"$") == std::string::npos ? arg : "'" + arg + "'");
  return cmd;
}

// The command that gives kjudged a cgroup it can delegate from.
std::string fix_command(const Hierarchy& h, const CgroupSetupOptions& o) {
  const std::string cmd = o.command_line.empty() ? own_command_line() : o.command_line;
  const bool systemd = is_dir("/run/systemd/system");
  if (!h.v2) return ::geteuid() == 0 ? "" : "sudo " + cmd + "   (cgroup v1: only root can create job cgroups)";
  if (::geteuid() != 0)
    return systemd ? "systemd-run --user --scope -p Delegate=yes -- " + cmd
                   : "sudo " + cmd + "   (or run it in a cgroup delegated to you, with memory and pids)";
  if (systemd) return "systemd-run --scope -p Delegate=yes -- " + cmd;
  const std::string top = h.v2_mount;
  return "mkdir -p " + top + "/init && for p in $(cat " + top + "/cgroup.procs); do echo $p > " + top +
         "/init/cgroup.procs; done; echo '+memory +pids' > " + top + "/cgroup.subtree_control; " + cmd;
}

bool setup_v2(Hierarchy& h, bool own_subtree, std::string* error) {
  std::lock_guard lock(setup_mutex());
  if (v2_ready()) return true;
  const bool shared = !delegates(h.v2_base) && shared_with_others(h.v2_base);
  if (!shared) return prepare_v2(h, error);
  if (own_subtree && ::geteuid() == 0 && make_own_subtree(h, error)) return v2_ready() = true;
  if (error->empty())
    *error = h.v2_base + " holds other processes (a shell, a session), so it cannot delegate memory and pids "
             "to job cgroups (cgroup v2's no-internal-processes rule)";
  return false;
}

}  // namespace

bool probe_job_cgroup(std::string* error) {
  CgroupLimits limits;
  limits.memory_bytes = 64ull << 20;
  limits.pids = 64;
  std::string why;
  auto cg = JobCgroup::create(limits, &why);
  if (cg) return true;  // removed again by its destructor
  if (why.empty()) cgroup_mode(&why);
  *error = "cannot create a job cgroup with memory and pids limits: " + why;
  return false;
}

CgroupSetup setup_cgroups(const CgroupSetupOptions& opts) {
  Hierarchy& h = hierarchy_mut();
  CgroupSetup s;
  s.mode = h.v2 ? "v2" : h.usable() ? "v1" : "";
  if (h.v2 && !setup_v2(h, opts.own_subtree, &s.error)) {
    s.fix = fix_command(h, opts);
    return s;
  }
  s.base = h.v2 ? h.v2_base : "";
  s.ok = probe_job_cgroup(&s.error);
  if (!s.ok) s.fix = fix_command(h, opts);
  return s;
}

bool move_to_leaf(pid_t pid, const std::string& leaf, std::string* error) {
  const Hierarchy& h = hierarchy();
  std::lock_guard lock(setup_mutex());
  if (!h.v2 || !v2_ready()) return true;  // v1: companions stay where they are
  const std::string dir = h.v2_base + "/" + leaf;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return failed(error, "mkdir " + dir, errno);
  int err = 0;
  if (!write_text(dir + "/cgroup.procs", std::to_string(pid), &err))
    return failed(error, "move pid " + std::to_string(pid) + " into " + dir, err);
  return true;
}

}  // namespace kjsandbox