// What a sandboxed child may see and use. A Policy is plain data: the launcher turns it into
// namespaces, mounts, limits and (next issue) seccomp/capabilities/cgroups.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <sys/types.h>
#include <string>
#include <vector>

namespace kjsandbox {

struct BindMount {
  std::string source;  // host path (file or directory)
  std::string target;  // path inside the sandbox; empty = same as source
  bool writable = false;
};

struct TmpfsMount {
  std::string target;
  std::uint64_t size_bytes = 64ull << 20;
};

struct Rlimits {
  std::uint64_t core_bytes = 0;
  std::uint64_t open_files = 256;
  std::uint64_t file_size_bytes = 256ull << 20;
  std::uint64_t stack_bytes = 64ull << 20;
  std::optional<std::uint64_t> address_space_bytes;  // unset = unlimited (CUDA reserves large ranges)
  std::optional<std::uint64_t> cpu_seconds;          // backstop; the wall limit is the primary one
  std::optional<std::uint64_t> processes;            // RLIMIT_NPROC (per host uid)
};

// System-call filter (libseccomp allow-list, compiled once per (profile, extra_allow) in the
// parent, loaded by the sandbox's init after capabilities are dropped and no_new_privs is set).
struct Seccomp {
  enum class Mode {
    Off,      // no filter (debugging only)
    Enforce,  // anything outside the allow-list: the whole tree is killed, Outcome::SeccompViolation
    Log,      // anything outside the allow-list is allowed and recorded in Report::seccomp_log
  };
  Mode mode = Mode::Enforce;
  std::string profile = "default";       // sandbox/policies/<profile>.txt ("empty": only what init needs)
  std::vector<std::string> extra_allow;  // more syscall names to allow (unconditionally)
};

// cgroup limits of the job's cgroup (v2, or v1/hybrid: memory, pids, cpu, cpuacct, freezer).
// The job cgroup is created under the calling process's own cgroup and removed afterwards.
struct CgroupLimits {
  bool enabled = true;                      // false: no cgroup (accounting from rusage only)
  std::optional<std::uint64_t> memory_bytes;  // memory limit, swap off; over it: Outcome::MemoryLimit
  std::optional<std::uint64_t> pids;          // tasks (processes + threads) in the tree
  std::optional<double> cpu_quota;            // CPUs (e.g. 2.0 = two cores' worth per period)
  // Relative CPU weight against the other job cgroups (and the caller's own) when the CPUs are
  // contended, on cgroup v2's scale 1..10000 (default 100): cpu.weight on v2, cpu.shares =
  // weight × 1024 / 100 on v1. A priority, not a limit: skipped where there is no cpu controller.
  std::optional<std::uint32_t> cpu_weight;
};

// (The fields the child's plan is built from are sent to the launcher's zygote: a new one must
// be added to encode_policy()/decode_policy() in sandbox/src/zygote.cpp too.)
struct Policy {
  std::vector<std::string> argv;            // argv[0] is an absolute path inside the sandbox
  std::map<std::string, std::string> env;   // the complete environment (nothing is inherited)
  std::string cwd = "/";

  // Root view: a tmpfs root holding these read-only binds (writable where said), plus the
  // usual top-level symlinks of a merged-/usr system (/bin -> usr/bin, ...), minimal /dev,
  // fresh /proc, and tmpfs mounts.
  std::vector<BindMount> binds;
  std::vector<TmpfsMount> tmpfs = {{"/tmp", 64ull << 20}, {"/dev/shm", 64ull << 20}};
  std::vector<std::string> devices;         // extra device nodes to bind (GPU profiles), e.g. /dev/nvidia0

  std::string hostname = "kjudge";
  bool share_network = false;               // false = fresh net namespace with nothing in it

  // Identity inside the sandbox and the host uid/gid it maps to. When kjudged runs as root the
  // host ids should be unprivileged and unique per slot; when it runs unprivileged, its own ids.
  std::uint32_t inside_uid = 1000;
  std::uint32_t inside_gid = 1000;
  std::optional<std::uint32_t> host_uid;    // unset = 65534 when root, else getuid()
  std::optional<std::uint32_t> host_gid;

  Rlimits rlimits;
  std::chrono::milliseconds wall_limit{10'000};
  // Asked when the wall limit is reached (and again at each later deadline): time the run spent
  // waiting on others rather than running its own work (a candidate waiting for the judge's worker
  // on a busy node). The deadline becomes start + wall_limit + wall_extension(); the caller bounds
  // what it returns. Unset: the limit is the limit.
  std::function<std::chrono::milliseconds()> wall_extension;
  // Cancellation: an fd owned by the caller (e.g. an eventfd, shared by all runs of one job).
  // When it becomes readable (or is already, at the start) the whole tree is killed and the
  // Report says Outcome::Cancelled. run() only polls it, never reads it. -1: not cancellable.
  int cancel_fd = -1;
  // After we SIGKILL the tree (wall limit, output limit, cancel), how long to wait for it to be
  // gone before giving up on it: Report::stuck, and the reaping continues in the background.
  std::chrono::milliseconds kill_grace{10'000};
  std::uint64_t output_limit_bytes = 1ull << 20;  // stdout and stderr each; over it: kill, OUTPUT_LIMIT
  std::string stdin_path;                   // host file fed to stdin; empty = /dev/null

  Seccomp seccomp;
  CgroupLimits cgroup;
  // Hardening of /proc (masked kcore/keys/sysrq-trigger/..., read-only sys/bus/fs/irq).
  bool mask_proc = true;
  std::vector<std::string> proc_unmask;     // masked entries to leave visible (GPU profiles: /proc/driver)
  std::vector<std::string> proc_hide;       // more /proc paths to mask (GPU profiles: other GPUs)
  // The registered resume zygote (sandbox.h) that runs argv in-process; empty = exec argv.
  std::string resume_in;
};

// Read-only binds of the host system a sandbox needs to run g++, python3 and OpenCL (PoCL):
// /usr, /etc/alternatives, /etc/ld.so.cache, /etc/OpenCL and /sys/devices/system/cpu (PoCL's
// hwloc needs the CPU topology), each only if the host has it.
// The /bin, /lib... symlinks of a merged-/usr host are recreated by the launcher.
std::vector<BindMount> default_system_binds();

// A GPU/accelerator passthrough profile (data: sandbox/profiles/<name>.toml): device nodes, driver
// library binds, /proc/driver entries and environment for GPU `gpu_index`. Entries the host lacks
// are skipped (a profile describes what may exist); `untested` profiles are flagged as such.
struct DeviceProfile {
  std::string name;
  bool untested = false;
  std::vector<std::string> devices;
  std::vector<BindMount> binds;
  std::map<std::string, std::string> env;
  std::vector<std::string> proc_unmask;  // masked /proc entries the device needs (/proc/driver)
  std::vector<std::string> proc_hide;    // more /proc entries to hide (other GPUs' /proc/driver entries)
  std::vector<std::string> notes;  // what was skipped and why
};

// Throws std::runtime_error for an unknown profile or a malformed file. Profiles are looked up
// in $KJSANDBOX_PROFILE_DIR, then the directory compiled in (the source tree's sandbox/profiles).
DeviceProfile load_device_profile(const std::string& name, int gpu_index);
// Adds the profile's devices, binds and environment to `policy`.
void apply_device_profile(const DeviceProfile& profile, Policy& policy);

// Names of the profiles compiled into the library.
std::vector<std::string> device_profile_names();

// The daemon calls this once at start: on cgroup v2 it makes its own cgroup able to hold job
// cgroups (moving itself into a leaf "kjsbx-supervisor" when needed, enabling memory/pids/cpu),
// and on v1 and v2 it kills and removes job cgroups ("kjsbx-<pid>-<n>") left behind by a
// process that no longer runs. Returns how many were removed; never throws.
int cleanup_stale_cgroups(std::string* log = nullptr);

// A daemon's cgroup set-up, once at start, before it reports ready (issue 14):
//   v2: its own cgroup must delegate memory and pids to job cgroups, which it cannot while other
//       processes share it (kjudged --dev started from a shell). own_subtree (dev mode) and root:
//       a subtree of its own, <cgroup2 mount>/kjudge-dev.<pid>, kjudged moved into its leaf
//       kjsbx-supervisor; a dead daemon's subtree is removed. Otherwise: refused, with `fix`.
//   v1 and v2: a probe, one job cgroup with memory and pids limits created and removed.
struct CgroupSetupOptions {
  bool own_subtree = false;
  std::string command_line;  // for `fix`; empty: this process's own (/proc/self/cmdline)
};
struct CgroupSetup {
  bool ok = false;
  std::string mode;   // "v2", "v1", "" (none)
  std::string base;   // v2: where job cgroups go
  std::string error;  // !ok: what failed
  std::string fix;    // !ok: the command that fixes it, when one is known
  // what failed and, when known, "\n  fix: <command>", as every caller reports it
  std::string explained() const { return fix.empty() ? error : error + "\n  fix: " + fix; }
};
CgroupSetup setup_cgroups(const CgroupSetupOptions& options = {});

// After setup_cgroups on v2: moves `pid` (a companion such as the dev redis-server) into the leaf
// <base>/<leaf>, beside the job cgroups. v1, or v2 not set up: nothing to do (true).
bool move_to_leaf(pid_t pid, const std::string& leaf, std::string* error);

// Creates one job cgroup with memory and pids limits and removes it; false with the reason.
bool probe_job_cgroup(std::string* error);

// The CPU time (ns) charged so far to the job cgroup that holds `pid`, a process some run() of
// this process started: its whole tree's, threads and children included (cpu.stat's usage_usec
// on v2, cpuacct.usage on v1). nullopt when pid is not in such a cgroup (or has exited).
std::optional<std::uint64_t> job_cpu_ns(pid_t pid);

// "v2", "v1" or "" (no usable cgroup hierarchy), and why not, for doctor/tests.
std::string cgroup_mode(std::string* why = nullptr);

}  // namespace kjsandbox
