// Parent side: turns a Policy into a ChildPlan (validated, ordered, all strings precomputed).
#include "child_plan.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/audit.h>
#include <sys/capability.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

namespace kjsandbox {
namespace {

constexpr std::array<const char*, 5> kDefaultDevices = {"/dev/null", "/dev/zero", "/dev/full",
                                                        "/dev/random", "/dev/urandom"};
// Top-level names that a merged-/usr host has as symlinks into /usr.
constexpr std::array<const char*, 6> kMergedUsrLinks = {"/bin",   "/sbin",  "/lib",
                                                        "/lib32", "/lib64", "/libx32"};
constexpr std::uint64_t kRootTmpfsBytes = 1ull << 20;

// /proc entries hidden as runc and nsjail do: files get /dev/null bound over them, directories
// an empty read-only tmpfs; kReadOnlyProc stay visible but read-only.
constexpr std::array<const char*, 14> kMaskedProc = {
    "/proc/kcore",       "/proc/keys",        "/proc/key-users",  "/proc/sysrq-trigger",
    "/proc/timer_list",  "/proc/timer_stats", "/proc/sched_debug", "/proc/latency_stats",
    "/proc/kallsyms",    "/proc/kmsg",        "/proc/acpi",       "/proc/scsi",
    "/proc/asound",      "/proc/driver"};
constexpr std::array<const char*, 5> kReadOnlyProc = {"/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq",
                                                      "/proc/sysvipc"};

#ifndef AUDIT_ARCH_NATIVE
#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#endif
#endif

struct CallerArea {
  unsigned long arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
};

// Fields 48-51 of /proc/self/stat (the process's argv and environ strings), read once.
const CallerArea& caller_area() {
  static const CallerArea area = [] {
    CallerArea a;
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = text.rfind(')');
    if (paren == std::string::npos) return a;
    std::istringstream ss(text.substr(paren + 2));
    std::vector<std::string> f;
    for (std::string w; ss >> w;) f.push_back(w);
    // f[0] is field 3 (state); field N is f[N - 3].
    if (f.size() < 49) return a;
    a.arg_start = std::stoul(f[45]);
    a.arg_end = std::stoul(f[46]);
    a.env_start = std::stoul(f[47]);
    a.env_end = std::stoul(f[48]);
    return a;
  }();
  return area;
}

// The host's top-level merged-/usr symlinks (name, link text), read once per process.
const std::vector<std::pair<std::string, std::string>>& merged_usr_links() {
  static const std::vector<std::pair<std::string, std::string>> links = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const char* name : kMergedUsrLinks) {
      char buf[PATH_MAX];
      struct stat st{};
      if (::lstat(name, &st) != 0 || !S_ISLNK(st.st_mode)) continue;
      ssize_t n = ::readlink(name, buf, sizeof buf - 1);
      if (n > 0) out.emplace_back(name, std::string(buf, static_cast<std::size_t>(n)));
    }
    return out;
  }();
  return links;
}

// Highest capability number of this kernel, read once per process.
int cap_last() {
  static const int last = [] {
    int v = static_cast<int>(cap_max_bits()) - 1;
    std::ifstream in("/proc/sys/kernel/cap_last_cap");
    int k = -1;
    if (in >> k && k > v) v = k;
    return v;
  }();
  return last;
}

struct EmptyCaps {
  cap_t caps = cap_init();  // every set clear; never freed (shared by all plans)
};

// "/a//b/./c/" -> "/a/b/c"; nullopt for relative paths and "..".
std::optional<std::string> normalize(const std::string& path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::string out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    i = j;
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    out += '/';
    out += part;
  }
  if (out.empty()) out.push_back('/');
  if (out.size() >= PATH_MAX - 16) return std::nullopt;
  return out;
}

int depth_of(const std::string& normalized) {
  return normalized == "/" ? 0 : static_cast<int>(std::count(normalized.begin(), normalized.end(), '/'));
}

bool is_under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::string strerror_text(int err) { return std::string(strerror(err)); }

struct Builder {
  ChildPlan& plan;
  std::string* error;
  std::vector<MountOp> ops;

  bool fail(std::string msg) {
    if (error) *error = std::move(msg);
    return false;
  }

  void add(MountOp op, const std::string& inside) {
    op.depth = depth_of(inside);
    op.target = plan.keep(kNewRoot + inside);
    ops.push_back(std::move(op));
  }

  bool bind(const std::string& source, const std::string& target, bool writable) {
    auto src = normalize(source);
    if (!src) return fail("bind source must be an absolute path without '..': '" + source + "'");
    auto dst = normalize(target.empty() ? source : target);
    if (!dst || *dst == "/")
      return fail("bind target must be an absolute path other than '/': '" + target + "'");
    struct stat st{};
    if (::stat(src->c_str(), &st) != 0)
      return fail("bind source " + *src + ": " + strerror_text(errno));
    MountOp op;
    op.kind = MountOp::Kind::Bind;
    op.source = plan.keep(kOldRoot + *src);
    op.source_is_dir = S_ISDIR(st.st_mode);
    op.attrs = writable ? (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
                        : (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    op.description = "bind " + *src + " -> " + *dst + (writable ? " (rw)" : " (ro)");
    add(std::move(op), *dst);
    return true;
  }

  bool device(const std::string& path) {
    auto p = normalize(path);
    if (!p || !is_under(*p, "/dev") || *p == "/dev")
      return fail("device must be an absolute path under /dev: '" + path + "'");
    struct stat st{};
    if (::stat(p->c_str(), &st) != 0) return fail("device " + *p + ": " + strerror_text(errno));
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
      return fail("device " + *p + " is not a device node");
    MountOp op;
    op.kind = MountOp::Kind::Bind;
    op.source = plan.keep(kOldRoot + *p);
    op.source_is_dir = false;
    op.recursive = false;
    op.attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
    op.description = "device " + *p;
    add(std::move(op), *p);
    return true;
  }

  bool tmpfs(const std::string& target, std::uint64_t size, const char* mode, unsigned long flags) {
    auto dst = normalize(target);
    if (!dst || *dst == "/") return fail("tmpfs target must be an absolute path other than '/': '" + target + "'");
    if (size == 0) return fail("tmpfs " + *dst + ": size must be positive");
    MountOp op;
    op.kind = MountOp::Kind::Tmpfs;
    op.data = plan.keep("size=" + std::to_string(size) + ",mode=" + mode);
    op.mount_flags = flags;
    op.description = "tmpfs " + *dst + " (" + std::to_string(size) + " bytes)";
    add(std::move(op), *dst);
    return true;
  }

  void symlink(const std::string& link_text, const std::string& inside) {
    MountOp op;
    op.kind = MountOp::Kind::Symlink;
    op.source = plan.keep(link_text);
    op.description = "symlink " + inside + " -> " + link_text;
    add(std::move(op), inside);
  }

  bool covered(const std::string& inside) const {
    for (const auto& op : ops) {
      std::string t = std::string(op.target).substr(std::strlen(kNewRoot));
      if (is_under(t, inside)) return true;
    }
    return false;
  }
};

}  // namespace

bool build_child_plan(const Policy& policy, ChildPlan& plan, std::string* error) {
  Builder b{plan, error, {}};

  // Command line, environment, working directory.
  if (policy.argv.empty()) return b.fail("argv is empty");
  if (policy.argv[0].empty() || policy.argv[0][0] != '/')
    return b.fail("argv[0] must be an absolute path inside the sandbox: '" + policy.argv[0] + "'");
  for (const auto& a : policy.argv) plan.argv.push_back(const_cast<char*>(plan.keep(a)));
  plan.argv.push_back(nullptr);
  for (const auto& [k, v] : policy.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      return b.fail("bad environment variable name '" + k + "'");
    plan.envp.push_back(const_cast<char*>(plan.keep(k + "=" + v)));
  }
  plan.envp.push_back(nullptr);
  auto cwd = normalize(policy.cwd.empty() ? "/" : policy.cwd);
  if (!cwd) return b.fail("cwd must be an absolute path: '" + policy.cwd + "'");
  plan.cwd = plan.keep(*cwd);
  if (policy.hostname.empty() || policy.hostname.size() > 64)
    return b.fail("hostname must be 1..64 characters");
  plan.hostname = plan.keep(policy.hostname);
  plan.hostname_len = policy.hostname.size();

  // Identity.
  const bool root = geteuid() == 0;
  plan.uid = policy.inside_uid;
  plan.gid = policy.inside_gid;
  plan.drop_groups = root;

  // Root view.
  for (const auto& m : policy.binds)
    if (!b.bind(m.source, m.target, m.writable)) return false;
  if (!b.tmpfs("/dev", 64 << 10, "755", MS_NOSUID | MS_NOEXEC)) return false;
  for (const char* d : kDefaultDevices)
    if (!b.device(d)) return false;
  for (const auto& d : policy.devices)
    if (!b.device(d)) return false;
  b.symlink("/proc/self/fd", "/dev/fd");
  b.symlink("/proc/self/fd/0", "/dev/stdin");
  b.symlink("/proc/self/fd/1", "/dev/stdout");
  b.symlink("/proc/self/fd/2", "/dev/stderr");
  for (const auto& t : policy.tmpfs)
    if (!b.tmpfs(t.target, t.size_bytes, "1777", MS_NOSUID | MS_NODEV)) return false;
  for (const auto& [name, text] : merged_usr_links())
    if (!b.covered(name)) b.symlink(text, name);
  {
    MountOp proc;
    proc.kind = MountOp::Kind::Proc;
    proc.mount_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    proc.description = "proc /proc";
    b.add(std::move(proc), "/proc");
  }
  if (policy.mask_proc) {
    for (const char* path : kMaskedProc) {
      if (std::find(policy.proc_unmask.begin(), policy.proc_unmask.end(), path) != policy.proc_unmask.end())
        continue;
      MountOp op;
      op.kind = MountOp::Kind::Mask;
      op.source = plan.keep(std::string(kOldRoot) + "/dev/null");
      op.description = std::string("mask ") + path;
      b.add(std::move(op), path);
    }
    for (const auto& path : policy.proc_hide) {
      auto n = normalize(path);
      if (!n || !is_under(*n, "/proc") || *n == "/proc") return b.fail("proc_hide must be under /proc: '" + path + "'");
      MountOp op;
      op.kind = MountOp::Kind::Mask;
      op.source = plan.keep(std::string(kOldRoot) + "/dev/null");
      op.description = "mask " + *n;
      b.add(std::move(op), *n);
    }
    for (const char* path : kReadOnlyProc) {
      MountOp op;
      op.kind = MountOp::Kind::ReadOnly;
      op.description = std::string("read-only ") + path;
      b.add(std::move(op), path);
    }
  }
  // Parents before children; among equals, policy order (later mounts stack on earlier ones).
  std::stable_sort(b.ops.begin(), b.ops.end(),
                   [](const MountOp& x, const MountOp& y) { return x.depth < y.depth; });
  plan.ops = std::move(b.ops);
  plan.seal_readonly = {"/", "/dev"};
  plan.root_tmpfs_options =
      plan.keep("size=" + std::to_string(kRootTmpfsBytes) + ",nr_inodes=4096,mode=755");
  plan.scratch_tmpfs_options = "size=64k,nr_inodes=64,mode=700";

  plan.rlimits = plan_rlimits(policy.rlimits);

  // Hardening.
  static const EmptyCaps empty_caps;
  if (!empty_caps.caps) return b.fail("cap_init failed");
  plan.empty_caps = empty_caps.caps;
  plan.cap_last = cap_last();
  plan.native_arch = AUDIT_ARCH_NATIVE;
  if (policy.seccomp.mode != Seccomp::Mode::Off) {
    std::string why;
    plan.seccomp = compile_seccomp(policy.seccomp, &why);
    if (!plan.seccomp) return b.fail(why);
    plan.seccomp_log = policy.seccomp.mode == Seccomp::Mode::Log;
  }
  const CallerArea& area = caller_area();
  plan.arg_start = area.arg_start;
  plan.arg_end = area.arg_end;
  plan.env_start = area.env_start;
  plan.env_end = area.env_end;
  return true;
}

}  // namespace kjsandbox
