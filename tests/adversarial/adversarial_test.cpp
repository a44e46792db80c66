// The adversarial battery (issue 3 "Tests"): one test per attack, each under the full policy
// (namespaces, read-only root, capabilities dropped, no_new_privs, seccomp allow-list, job
// cgroup), asserting the outcome and, in TearDown, that the host is unchanged.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>

#include "helpers.h"
#include "kjsandbox/sandbox.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;
constexpr const char* kAttacks = "/opt/attacks";

std::string sha_of(const std::string& path) { return read_file(path); }

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Job cgroups of this process (other processes on the host may run sandboxes concurrently).
std::vector<std::string> kjsbx_cgroups() {
  std::vector<std::string> out;
  const std::string mine = "kjsbx-" + std::to_string(::getpid()) + "-";
  for (const char* base : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/freezer",
                           "/sys/fs/cgroup"}) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(base, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 4) it.disable_recursion_pending();
      auto name = it->path().filename().string();
      if (name.rfind(mine, 0) == 0) out.push_back(it->path().string());
    }
  }
  return out;
}

// What an escape would change on the host.
struct HostState {
  std::string passwd, hostname, sentinel;
  int mounts = 0;
  std::vector<std::string> cgroups;
  bool operator==(const HostState&) const = default;
};

class Adversarial : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    write_file(sentinel_, "untouched\n");
    kjsandbox::trim_pools();
    before_ = host_state();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    // Runs leave idle job cgroups in a pool for reuse: each must be empty; once the pool is
    // trimmed, none of this process's may be left.
    for (const auto& dir : kjsbx_cgroups())
      EXPECT_EQ(read_file(dir + "/cgroup.procs"), "") << dir << " still holds tasks";
    kjsandbox::trim_pools();
    HostState after = host_state();
    EXPECT_EQ(after.passwd, before_.passwd) << "/etc/passwd changed";
    EXPECT_EQ(after.hostname, before_.hostname) << "hostname changed";
    EXPECT_EQ(after.sentinel, before_.sentinel) << "host sentinel file changed";
    EXPECT_EQ(after.mounts, before_.mounts) << "host mount table changed";
    EXPECT_EQ(after.cgroups, before_.cgroups) << "job cgroups left behind";
    ::unlink(sentinel_.c_str());
  }
  HostState host_state() const {
    HostState s;
    s.passwd = sha_of("/etc/passwd");
    char h[256] = {};
    ::gethostname(h, sizeof h);
    s.hostname = h;
    s.sentinel = read_file(sentinel_);
    s.mounts = count_lines(read_file("/proc/self/mountinfo"));
    s.cgroups = kjsbx_cgroups();
    return s;
  }

  // The full policy, the attack program bound in, a small wall limit.
  kjsandbox::Policy attack(std::vector<std::string> args) const {
    std::vector<std::string> argv = {kAttacks};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = policy_for(argv);
    p.binds.push_back({KJSBX_ATTACKS, kAttacks, false});
    p.wall_limit = 3s;
    p.cgroup.memory_bytes = 256ull << 20;
    p.cgroup.pids = 64;
    return p;
  }
  kjsandbox::Report run_attack(std::vector<std::string> args) { return kjsandbox::run(attack(std::move(args))); }

  void expect_seccomp(const std::vector<std::string>& args, const std::string& syscall) {
    auto r = run_attack(args);
    EXPECT_EQ(r.outcome, Outcome::SeccompViolation)
        << kjsandbox::to_string(r.outcome) << " code=" << r.exit_code << " " << r.error << r.stderr_data;
    EXPECT_EQ(r.seccomp_syscall_name, syscall);
  }

  std::string sentinel_ = "/tmp/kjsbx-adversarial-sentinel-" + std::to_string(::getpid());
  HostState before_;
};

// ---------------------------------------------------------------- filesystem escapes
class AdversarialFilesystem : public Adversarial {};

TEST_F(AdversarialFilesystem, HostFilesAreNotVisible) {
  auto r = kjsandbox::run(shell("for f in /etc/shadow /etc/passwd /root /home /work " + sentinel_ +
                                "; do test -e $f && echo LEAK $f; done; true"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "");
}

TEST_F(AdversarialFilesystem, OtherJobDirsAreNotVisible) {
  TempDir mine, other;
  write_file(other.file("secret"), "other job\n");
  auto p = shell("cat " + other.file("secret") + " /job/../secret 2>/dev/null; ls / | tr '\\n' ' '");
  p.binds.push_back({mine.path(), "/job", true});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data.find("other job"), std::string::npos);
  EXPECT_EQ(read_file(other.file("secret")), "other job\n");
}

TEST_F(AdversarialFilesystem, SymlinksPlantedForTheCollectorStayLinks) {
  TempDir job;
  auto p = shell("ln -s /etc/shadow /job/output.bin; ln -s " + sentinel_ + " /job/sentinel; ln /usr/bin/id /job/hard 2>/dev/null; true");
  p.binds.push_back({job.path(), "/job", true});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  struct stat st{};
  ASSERT_EQ(::lstat(job.file("output.bin").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // a link, never a copy of the host's file
  EXPECT_FALSE(exists(job.file("hard")));  // cross-mount hard link refused
}

TEST_F(AdversarialFilesystem, ReadOnlyMountsRefuseWrites) {
  auto r = kjsandbox::run(shell("for f in /usr/bin/evil /etc/evil /evil /dev/evil /proc/sys/kernel/hostname; do "
                                "(echo x > $f) 2>/dev/null && echo WROTE $f; done; true"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "");
  EXPECT_FALSE(exists("/usr/bin/evil"));
}

TEST_F(AdversarialFilesystem, SetuidBinaryDoesNotGainRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid-root file";
  TempDir job;
  const std::string id = job.file("id");
  std::filesystem::copy_file("/usr/bin/id", id);
  ASSERT_EQ(::chown(id.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(id.c_str(), 04755), 0);
  auto p = policy_for({"/job/id", "-u"});
  p.binds.push_back({job.path(), "/job", false});
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "1000\n");
}

// ---------------------------------------------------------------- privilege and namespace escapes
class AdversarialPrivilege : public Adversarial {};

TEST_F(AdversarialPrivilege, Unshare) { expect_seccomp({"unshare"}, "unshare"); }
TEST_F(AdversarialPrivilege, CloneWithNamespaceFlags) { expect_seccomp({"clone_ns"}, "clone"); }
TEST_F(AdversarialPrivilege, Setns) { expect_seccomp({"setns"}, "setns"); }
TEST_F(AdversarialPrivilege, Mount) { expect_seccomp({"mount"}, "mount"); }
TEST_F(AdversarialPrivilege, Ptrace) { expect_seccomp({"ptrace"}, "ptrace"); }
TEST_F(AdversarialPrivilege, Chroot) { expect_seccomp({"chroot"}, "chroot"); }
// Device nodes are refused with EPERM (what the kernel answers in a user namespace), not a kill:
// the CUDA driver library probes for missing /dev/nvidia* nodes this way in a GPU-less sandbox.
TEST_F(AdversarialPrivilege, MknodDeviceIsRefused) {
  auto r = run_attack({"mknod_dev"});
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 1) << "mknod of a character device succeeded";
}

TEST_F(AdversarialPrivilege, MkfifoStillWorks) {
  auto r = run_attack({"mkfifo"});
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 0);
}

TEST_F(AdversarialPrivilege, KillMinusOneOnlyReachesTheSandbox) {
  const std::string arg = unique_sleep_arg();
  pid_t sentinel = ::fork();
  if (sentinel == 0) {
    ::execl("/bin/sleep", "sleep", arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(1);
  }
  auto r = run_attack({"kill_all"});
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(::kill(sentinel, 0), 0) << "a host process was killed";
  ::kill(sentinel, SIGKILL);
  ::waitpid(sentinel, nullptr, 0);
}

TEST_F(AdversarialPrivilege, SignalsToTheDaemonDoNotArrive) {
  auto r = run_attack({"kill_pid", std::to_string(::getpid())});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, std::to_string(ESRCH) + "\n");  // our pid does not exist in there
}

// ---------------------------------------------------------------- syscall surface
class AdversarialSyscalls : public Adversarial {};

TEST_F(AdversarialSyscalls, IoUring) { expect_seccomp({"io_uring"}, "io_uring_setup"); }
TEST_F(AdversarialSyscalls, Userfaultfd) { expect_seccomp({"userfaultfd"}, "userfaultfd"); }
TEST_F(AdversarialSyscalls, PerfEventOpen) { expect_seccomp({"perf_event_open"}, "perf_event_open"); }
TEST_F(AdversarialSyscalls, Bpf) { expect_seccomp({"bpf"}, "bpf"); }
TEST_F(AdversarialSyscalls, Keyctl) { expect_seccomp({"keyctl"}, "keyctl"); }
TEST_F(AdversarialSyscalls, AddKey) { expect_seccomp({"add_key"}, "add_key"); }
// TIOCSTI fails with EPERM from the second filter whatever the upper bits (no tty is reachable
// from the sandbox anyway).
TEST_F(AdversarialSyscalls, TiocstiIsRefused) {
  auto r = run_attack({"tiocsti"});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, std::to_string(EPERM) + "\n");
}
TEST_F(AdversarialSyscalls, TiocstiWithHighBitsIsRefused) {
  auto r = run_attack({"tiocsti_high"});  // the kernel would truncate cmd to TIOCSTI
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, std::to_string(EPERM) + "\n");
}

TEST_F(AdversarialSyscalls, I386AbiThroughInt80) {
  auto r = run_attack({"int80"});
  EXPECT_EQ(r.outcome, Outcome::SeccompViolation) << kjsandbox::to_string(r.outcome) << " " << r.exit_code;
  EXPECT_EQ(r.seccomp_arch, "x86");
}

TEST_F(AdversarialSyscalls, X32Abi) {
  auto r = run_attack({"x32"});
  EXPECT_EQ(r.outcome, Outcome::SeccompViolation) << kjsandbox::to_string(r.outcome) << " " << r.exit_code;
}

TEST_F(AdversarialSyscalls, OnlyUnixSockets) {
  auto r = run_attack({"sockets"});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  const std::string eaf = std::to_string(EAFNOSUPPORT);
  EXPECT_EQ(r.stdout_data, "1:0\n2:" + eaf + "\n10:" + eaf + "\n16:" + eaf + "\n17:" + eaf + "\n");
}

TEST_F(AdversarialSyscalls, Clone3IsEnosysAndThreadsStillWork) {
  auto r = run_attack({"clone3"});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "clone3:" + std::to_string(ENOSYS) + "\n");
}

TEST_F(AdversarialSyscalls, LogModeRecordsAndLetsThrough) {
  auto p = attack({"ptrace"});
  p.seccomp.mode = kjsandbox::Seccomp::Mode::Log;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_NE(std::find(r.seccomp_log.begin(), r.seccomp_log.end(), "ptrace"), r.seccomp_log.end());
}

// ---------------------------------------------------------------- resource attacks
class AdversarialResources : public Adversarial {};

TEST_F(AdversarialResources, ForkBomb) {
  auto p = attack({"forkbomb"});
  p.wall_limit = 1500ms;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout) << kjsandbox::to_string(r.outcome) << r.error;
  EXPECT_LT(r.wall_seconds, 4);
}

TEST_F(AdversarialResources, MemoryBomb) {
  auto p = attack({"membomb"});
  p.cgroup.memory_bytes = 128ull << 20;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::MemoryLimit) << kjsandbox::to_string(r.outcome) << r.error;
  EXPECT_TRUE(r.oom_killed);
  EXPECT_LE(r.memory_peak_bytes, (128ull << 20) + (1 << 20));
}

TEST_F(AdversarialResources, TmpfsFill) {
  auto p = attack({"fill", "/tmp/fill"});
  p.tmpfs = {{"/tmp", 8ull << 20}};
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, std::to_string(ENOSPC) + "\n");
}

TEST_F(AdversarialResources, FileSizeLimitOnWritableBind) {
  TempDir job;
  auto p = attack({"fill", "/job/big"});
  p.binds.push_back({job.path(), "/job", true});
  p.rlimits.file_size_bytes = 4ull << 20;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, std::to_string(EFBIG) + "\n");
  EXPECT_LE(std::filesystem::file_size(job.file("big")), 4ull << 20);
}

TEST_F(AdversarialResources, CpuBurnInManyThreadsIsThrottled) {
  auto p = attack({"spin_threads", "8"});
  p.cgroup.cpu_quota = 0.5;
  p.wall_limit = 2s;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout) << kjsandbox::to_string(r.outcome);
  EXPECT_LT(r.cpu_seconds, 2 * 0.5 + 0.4) << "quota not enforced";
}

TEST_F(AdversarialResources, SleepForever) {
  auto p = attack({"sleep"});
  p.wall_limit = 500ms;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout);
  EXPECT_LT(r.wall_seconds, 2);
}

TEST_F(AdversarialResources, Sigstop) {
  auto p = attack({"sigstop"});
  p.wall_limit = 500ms;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout);
  EXPECT_LT(r.wall_seconds, 2);
}

TEST_F(AdversarialResources, DoubleForkDaemonDies) {
  const std::string arg = unique_sleep_arg();
  auto r = run_attack({"daemon", arg});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(host_pids_with_arg(arg).empty()) << "the daemon outlived its sandbox";
}

TEST_F(AdversarialResources, IgnoringSignals) {
  auto p = attack({"ignore_signals"});
  p.wall_limit = 500ms;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout);
  EXPECT_LT(r.wall_seconds, 2);
}

TEST_F(AdversarialResources, FdExhaustion) {
  auto r = run_attack({"fds"});
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "253 " + std::to_string(EMFILE) + "\n");  // 256 minus fds 0-2
}

TEST_F(AdversarialResources, TenGiBToStdout) {
  auto r = run_attack({"flood"});
  EXPECT_EQ(r.outcome, Outcome::OutputLimit);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_data.size(), 1u << 20);
  EXPECT_LT(r.wall_seconds, 3);
}

// ---------------------------------------------------------------- leak checks from inside
class AdversarialLeaks : public Adversarial {};

TEST_F(AdversarialLeaks, OnlyStdioAndTheStatusChannel) {
  auto r = kjsandbox::run(policy_for({"/bin/ls", "/proc/self/fd"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "0\n1\n2\n3\n");  // 3: ls's own directory fd
}

TEST_F(AdversarialLeaks, NoCapabilitiesAndLockedSecurebits) {
  auto r = kjsandbox::run(shell("grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  for (const char* k : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_NE(r.stdout_data.find(std::string(k) + ":\t0000000000000000"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("NoNewPrivs:\t1"), std::string::npos);
  EXPECT_NE(r.stdout_data.find("Seccomp:\t2"), std::string::npos);
}

TEST_F(AdversarialLeaks, NoHostMounts) {
  auto r = kjsandbox::run(policy_for({"/bin/cat", "/proc/self/mountinfo"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  for (const char* host : {" /work", " /home", " /root", "/oldroot", "/newroot"})
    EXPECT_EQ(r.stdout_data.find(host), std::string::npos) << host;
}

TEST_F(AdversarialLeaks, CleanEnvironment) {
  ::setenv("KJSBX_SECRET", "hunter2", 1);
  auto r = kjsandbox::run(shell("env; cat /proc/1/environ; cat /proc/1/cmdline"));
  ::unsetenv("KJSBX_SECRET");
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data.find("hunter2"), std::string::npos);
  EXPECT_EQ(r.stdout_data.find("adversarial_tests"), std::string::npos);  // the daemon's command line
  EXPECT_NE(r.stdout_data.find("kjsandbox-init"), std::string::npos);
}

TEST_F(AdversarialLeaks, OnlyOwnProcessesVisible) {
  auto r = kjsandbox::run(shell("ls -d /proc/[0-9]* | wc -l"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_LE(std::stoi(r.stdout_data), 4);  // init, sh, ls, wc
}

TEST_F(AdversarialLeaks, OnlyLoopbackInterface) {
  auto r = kjsandbox::run(shell("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "lo\n");
}

TEST_F(AdversarialLeaks, OwnHostname) {
  auto r = kjsandbox::run(policy_for({"/bin/hostname"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "kjudge\n");
}

TEST_F(AdversarialLeaks, SensitiveProcEntriesMasked) {
  auto r = kjsandbox::run(shell(
      "for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/kallsyms; do "
      "test -s $f && echo READABLE $f; done; (echo h > /proc/sysrq-trigger) 2>/dev/null && echo SYSRQ; "
      "ls -A /proc/acpi/ /proc/scsi/ 2>/dev/null | grep -v ':$' | grep .; grep -q ' /proc/sys ro,' /proc/self/mountinfo || echo SYS_RW; true"));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "");
}

// ---------------------------------------------------------------- reporting accuracy
class AdversarialReporting : public Adversarial {};

TEST_F(AdversarialReporting, ExitCodes) {
  for (int code : {0, 1, 42, 127, 255}) {
    auto r = run_attack({"exit", std::to_string(code)});
    ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
    EXPECT_EQ(r.exit_code, code);
  }
}

TEST_F(AdversarialReporting, EachSignal) {
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGILL, SIGBUS, SIGKILL, SIGTERM, SIGINT, SIGUSR1, SIGSYS}) {
    auto r = run_attack({"signal", std::to_string(sig)});
    ASSERT_EQ(r.outcome, Outcome::Signaled) << sig << " " << kjsandbox::to_string(r.outcome) << r.error;
    EXPECT_EQ(r.signal, sig);
  }
}

TEST_F(AdversarialReporting, CpuTimeOfMultiThreadedBurn) {
  auto p = attack({"burn", "2"});
  p.wall_limit = 10s;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_TRUE(r.cgroup_used);
  EXPECT_GT(r.cpu_seconds, 1.8);
  EXPECT_LT(r.cpu_seconds, 2.5);
}

TEST_F(AdversarialReporting, PeakMemoryOfKnownAllocationWithinTenPercent) {
  auto p = attack({"alloc", "200"});
  p.cgroup.memory_bytes = 512ull << 20;
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  ASSERT_TRUE(r.cgroup_used);
  const double mib = static_cast<double>(r.memory_peak_bytes) / (1 << 20);
  EXPECT_GT(mib, 200 * 0.9) << mib;
  EXPECT_LT(mib, 200 * 1.1) << mib;
  EXPECT_FALSE(r.oom_killed);
}

TEST_F(AdversarialReporting, StaleCgroupsOfADeadDaemonAreRemoved) {
  if (kjsandbox::cgroup_mode().empty()) GTEST_SKIP() << "no cgroups";
  // A job cgroup named after a pid that does not run.
  std::string base;
  for (const auto& line : lines(read_file("/proc/self/cgroup")))
    if (line.find(":memory:") != std::string::npos) base = "/sys/fs/cgroup/memory" + line.substr(line.rfind(':') + 1);
  if (base.empty() || !exists(base)) GTEST_SKIP() << "not a v1 memory hierarchy";
  const std::string stale = base + "/kjsbx-999999999-0";
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0);
  std::string log;
  EXPECT_GE(kjsandbox::cleanup_stale_cgroups(&log), 1) << log;
  EXPECT_FALSE(exists(stale));
}

// ---------------------------------------------------------------- positive: toolchains work
class AdversarialPositive : public Adversarial {};

TEST_F(AdversarialPositive, NvccCompilesInsideTheSandbox) {
  if (!exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc";
  TempDir job;
  write_file(job.file("k.cu"), "__global__ void k(float* a) { a[threadIdx.x] *= 2; }\nint main() { return 0; }\n");
  auto p = policy_for({"/usr/local/cuda/bin/nvcc", "-c", "-o", "/job/k.o", "/job/k.cu"});
  p.binds.push_back({job.path(), "/job", true});
  p.env["PATH"] = "/usr/local/cuda/bin:/usr/bin:/bin";
  p.env["HOME"] = "/tmp";
  p.cwd = "/job";
  p.wall_limit = 120s;
  p.tmpfs = {{"/tmp", 512ull << 20}};
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << kjsandbox::to_string(r.outcome) << r.seccomp_syscall_name
                                        << r.stderr_data;
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_TRUE(exists(job.file("k.o")));
}

}  // namespace
}  // namespace kjtest
