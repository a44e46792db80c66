// What a sandboxed child may see and use. A Policy is plain data: the launcher turns it into
// namespaces, mounts, limits and (next issue) seccomp/capabilities/cgroups.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
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
  std::uint64_t output_limit_bytes = 1ull << 20;  // stdout and stderr each; over it: kill, OUTPUT_LIMIT
  std::string stdin_path;                   // host file fed to stdin; empty = /dev/null
};

// Read-only binds of the host system a sandbox needs to run g++, python3 and OpenCL (PoCL):
// /usr, /etc/alternatives, /etc/ld.so.cache, /etc/OpenCL and /sys/devices/system/cpu (PoCL's
// hwloc needs the CPU topology), each only if the host has it.
// The /bin, /lib... symlinks of a merged-/usr host are recreated by the launcher.
std::vector<BindMount> default_system_binds();

}  // namespace kjsandbox
