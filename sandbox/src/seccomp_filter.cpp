// Parent side of the system-call filter: allow-list text -> libseccomp rules -> BPF, cached.
#include "seccomp_filter.h"

#include <errno.h>
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <cstddef>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace kjsandbox {
namespace {

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

constexpr std::uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;

// What the sandbox's init itself does after it loaded the filter (it is filtered too, and a
// notification it raised itself could never be answered): always allowed.
constexpr const char* kInitNeeds[] = {
    "read",     "write",       "close",         "close_range", "ppoll",  "poll",      "wait4",
    "kill",     "exit_group",  "exit",          "rt_sigprocmask", "rt_sigaction", "signalfd4",
    "ioctl:no-tiocsti", "clone:no-ns-flags",   "fcntl",       "dup3",   "prlimit64", "setresuid",
    "setresgid", "chdir",      "execve",        "getpid",      "rt_sigreturn", "restart_syscall",
    // what a sanitizer runtime may do in the cloned init (sanitizer builds of kjudge)
    "sigaltstack", "mmap",     "munmap",        "madvise",     "gettid", "tgkill",
};

struct Entry {
  std::string name;
  std::string filter;  // empty = unconditional
};

bool parse_profile(const std::string& profile, std::vector<Entry>* out, std::string* error) {
  const std::string* text = nullptr;
  for (const auto& [name, body] : embedded_seccomp_profiles())
    if (name == profile) text = &body;
  if (!text) {
    *error = "unknown seccomp profile '" + profile + "'";
    return false;
  }
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    line = line.substr(b, e - b + 1);
    Entry entry;
    auto colon = line.find(':');
    entry.name = line.substr(0, colon);
    if (colon != std::string::npos) entry.filter = line.substr(colon + 1);
    out->push_back(std::move(entry));
  }
  return true;
}

struct Ctx {
  scmp_filter_ctx ctx;
  ~Ctx() { seccomp_release(ctx); }
};

int add_entry(scmp_filter_ctx ctx, const Entry& e, std::string* error) {
  const int nr = seccomp_syscall_resolve_name(e.name.c_str());
  if (nr == __NR_SCMP_ERROR) return 0;  // unknown to this libseccomp: stays denied
  int rc = 0;
  if (e.filter.empty()) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
  } else if (e.filter == "no-ns-flags") {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, kNamespaceFlags, 0));
  } else if (e.filter == "enosys") {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
  } else if (e.filter == "unix-only") {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0_64(SCMP_CMP_EQ, AF_UNIX));
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, SCMP_A0_64(SCMP_CMP_NE, AF_UNIX));
  } else if (e.filter == "no-tiocsti") {
    // (libseccomp 2.5 takes one comparison per argument: TIOCLINUX, which needs a VT and
    // CAP_SYS_ADMIN for its dangerous subcommands, stays allowed.)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A1_32(SCMP_CMP_NE, TIOCSTI));
  } else if (e.filter == "no-devices") {
    // FIFOs, sockets and plain files (type 0 is a regular file) are what build tools make with
    // mknod; character and block devices are what an escape would want.
    const unsigned arg = e.name == "mknodat" ? 2 : 1;
    for (std::uint32_t type : {0u, static_cast<std::uint32_t>(S_IFREG), static_cast<std::uint32_t>(S_IFIFO),
                               static_cast<std::uint32_t>(S_IFSOCK)})
      if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_CMP32(arg, SCMP_CMP_MASKED_EQ, S_IFMT, type))) != 0)
        break;
    // Device nodes fail with EPERM, as the kernel itself answers in a user namespace: the CUDA
    // driver library probes for missing /dev/nvidia* nodes this way (in a compile sandbox, with no
    // GPU) and must see a refusal, not be killed.
    for (std::uint32_t type : {static_cast<std::uint32_t>(S_IFCHR), static_cast<std::uint32_t>(S_IFBLK)})
      if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, SCMP_CMP32(arg, SCMP_CMP_MASKED_EQ, S_IFMT, type));
  } else if (e.filter == "personality") {
    for (std::uint32_t v : {0x0u, 0x8u, 0x20000u, 0x20008u, 0xffffffffu})
      if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0_32(SCMP_CMP_EQ, v))) != 0) break;
  } else {
    *error = "seccomp: unknown filter '" + e.filter + "' on " + e.name;
    return -EINVAL;
  }
  if (rc != 0) *error = "seccomp: rule for " + e.name + (e.filter.empty() ? "" : ":" + e.filter) +
                        ": " + std::strerror(-rc);
  return rc;
}

std::shared_ptr<const SeccompProgram> build(const Seccomp& s, std::string* error) {
  std::vector<Entry> entries;
  if (!parse_profile(s.profile, &entries, error)) return nullptr;
  std::set<std::string> listed;
  for (const auto& e : entries) listed.insert(e.name);
  for (std::string n : kInitNeeds) {
    auto colon = n.find(':');
    Entry e{n.substr(0, colon), colon == std::string::npos ? "" : n.substr(colon + 1)};
    if (!listed.count(e.name)) entries.push_back(e);
  }
  for (const auto& n : s.extra_allow) entries.push_back({n, ""});
  // One entry per name; an unconditional entry (extra_allow) replaces a filtered one.
  std::map<std::string, Entry> by_name;
  for (auto& e : entries) {
    auto it = by_name.find(e.name);
    if (it == by_name.end() || e.filter.empty()) by_name[e.name] = e;
  }
  Ctx c{seccomp_init(SCMP_ACT_NOTIFY)};
  if (!c.ctx) {
    *error = "seccomp_init failed";
    return nullptr;
  }
  // i386 (int 0x80) and x32 calls are not in the native filter: they take the bad-arch action.
  bool badarch_kills = false;
  if (seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_NOTIFY) != 0 &&
      (badarch_kills = true, seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)) {
    *error = "seccomp: cannot set the bad-arch action";
    return nullptr;
  }
  seccomp_attr_set(c.ctx, SCMP_FLTATR_CTL_NNP, 0);
  // A binary tree of syscall numbers instead of a linear chain: fewer instructions per call, and
  // the kernel emulates the filter for every syscall number when init attaches it (the action
  // cache), which with a linear chain of ~300 calls cost ~0.2 ms per launch.
  seccomp_attr_set(c.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const auto& [name, e] : by_name)
    if (add_entry(c.ctx, e, error) != 0) return nullptr;

  int fd = ::memfd_create("kjsandbox-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  auto prog = std::make_shared<SeccompProgram>();
  prog->badarch_kills = badarch_kills;
  int rc = seccomp_export_bpf(c.ctx, fd);
  if (rc == 0) {
    off_t size = ::lseek(fd, 0, SEEK_END);
    prog->code.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    if (::pread(fd, prog->code.data(), prog->code.size() * sizeof(sock_filter), 0) !=
        static_cast<ssize_t>(prog->code.size() * sizeof(sock_filter)))
      rc = -EIO;
  }
  ::close(fd);
  if (rc != 0 || prog->code.empty()) {
    *error = std::string("seccomp_export_bpf: ") + std::strerror(rc ? -rc : EINVAL);
    return nullptr;
  }
  prog->prog.len = static_cast<unsigned short>(prog->code.size());
  prog->prog.filter = prog->code.data();
  // The kernel truncates ioctl's cmd to 32 bits, libseccomp 2.5 compares 64: a second filter
  // fails TIOCSTI with any upper bits with EPERM (ERRNO outranks the first filter's ALLOW).
  prog->ioctl_code = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + 8),  // args[1], low word
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  prog->ioctl_prog.len = static_cast<unsigned short>(prog->ioctl_code.size());
  prog->ioctl_prog.filter = prog->ioctl_code.data();
  return prog;
}

}  // namespace

std::shared_ptr<const SeccompProgram> compile_seccomp(const Seccomp& s, std::string* error) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const SeccompProgram>> cache;
  std::string key = s.profile;
  for (const auto& n : s.extra_allow) key += "\n" + n;
  std::lock_guard lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto prog = build(s, error);
  if (prog) cache.emplace(key, prog);
  return prog;
}

std::vector<std::string> seccomp_profile_entries(const std::string& profile, std::string* error) {
  std::vector<Entry> entries;
  std::vector<std::string> out;
  if (!parse_profile(profile, &entries, error)) return out;
  for (const auto& e : entries) out.push_back(e.filter.empty() ? e.name : e.name + ":" + e.filter);
  return out;
}

std::string seccomp_arch_name(std::uint32_t arch, int nr) {
  if (arch == AUDIT_ARCH_X86_64) return (nr & 0x40000000) ? "x32" : "x86_64";
  if (arch == AUDIT_ARCH_I386) return "x86";
  if (arch == AUDIT_ARCH_AARCH64) return "aarch64";
  char buf[32];
  std::snprintf(buf, sizeof buf, "arch 0x%x", arch);
  return buf;
}

std::string seccomp_syscall_name(std::uint32_t arch, int nr) {
  std::uint32_t token = arch;
  int n = nr;
  if (arch == AUDIT_ARCH_X86_64 && (nr & 0x40000000)) token = SCMP_ARCH_X32;
  char* name = seccomp_syscall_resolve_num_arch(token, n);
  if (!name) {
    std::string num = std::to_string(nr);
    num.insert(num.begin(), '#');  // not "#" + ...: GCC 12 -O3 false -Wrestrict
    return num;
  }
  std::string out(name);
  std::free(name);
  return out;
}

}  // namespace kjsandbox
