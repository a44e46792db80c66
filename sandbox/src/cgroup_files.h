// Inside the cgroup code (cgroup.cpp, cgroup_v1.cpp, cgroup_v2.cpp, cgroup_setup.cpp): the control
// files' read/write helpers and the hierarchy discovered once from /proc/self/mountinfo and
// /proc/self/cgroup. Not part of libkjsandbox's interface.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kjsandbox::cgroup_detail {

constexpr std::uint64_t kUnlimited = ~0ull;
constexpr const char* kPrefix = "kjsbx-";               // job cgroups: kjsbx-<creator pid>-<n>
constexpr const char* kSupervisor = "kjsbx-supervisor";  // v2: the leaf kjudged moves itself into

std::string errno_text(int err);
bool write_text(const std::string& path, const std::string& text, int* err = nullptr);
std::optional<std::string> read_text(const std::string& path);
std::optional<std::uint64_t> read_u64(const std::string& path);
// "key value" lines (memory.events, cpu.stat, memory.oom_control).
std::optional<std::uint64_t> read_key(const std::string& path, const std::string& key);
bool is_dir(const std::string& p);
// A job cgroup that could not be made: `error` says what failed.
std::nullptr_t no_cgroup(std::string* error, const std::string& what, int err);
// rmdir, retried while the cgroup still holds (dying) tasks
bool remove_dir(const std::string& dir);
// The lines of /proc/<pid>/cgroup ("self" for this process): a hierarchy's controllers
// ("memory" or "cpu,cpuacct" on v1; empty on v2) and the cgroup's path in it.
struct ProcCgroup {
  std::string controllers;
  std::string path;
};
std::vector<ProcCgroup> proc_cgroups(const std::string& pid);
std::vector<pid_t> procs_of(const std::string& dir);
std::vector<std::string> subdirs(const std::string& dir);

struct Hierarchy {
  bool v2 = false;
  std::string v2_base;                          // v2: the directory job cgroups go in
  std::string v2_mount;                         // v2: the hierarchy's mount point (its top)
  std::map<std::string, std::string> v1_base;   // v1: controller -> directory
  std::string why;                              // when neither is usable
  bool usable() const { return v2 || !v1_base.empty(); }
};

// Discovered once. On v2 setup_cgroups() may move the base (a subtree of our own) before any job.
Hierarchy& hierarchy_mut();
const Hierarchy& hierarchy();
// kjsbx-<our pid>-<n> with the next n whose directory does not exist in any hierarchy (cgroup.cpp).
std::string unused_job_cgroup_name(const Hierarchy& h);
// Guards the v2 delegation state (prepare_v2, setup_cgroups, move_to_leaf, stale cleanup).
std::mutex& setup_mutex();

// v2 (cgroup_v2.cpp): delegate the controllers from our own cgroup, once; the caller holds
// setup_mutex(). v2_ready(): job cgroups can be made under hierarchy().v2_base.
bool prepare_v2(const Hierarchy& h, std::string* error);
bool& v2_ready();
// "+memory +pids +cpu" as far as `dir` offers them; whether `dir` delegates memory and pids.
std::string wanted_controllers(const std::string& dir);
bool delegates(const std::string& dir);

// v1 (cgroup_v1.cpp): no task left in the cgroup; every task killed (frozen first where there is
// a freezer).
bool v1_empty(const std::string& pids_dir, const std::string& any);
void kill_v1(const std::string& freezer, const std::string& any, const std::string& pids_dir = {});

}  // namespace kjsandbox::cgroup_detail
