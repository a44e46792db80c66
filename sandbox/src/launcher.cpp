// Parent side of run(): plan, clone3, id maps, release, then watch the child through its pidfd
// and the stdout/stderr/status pipes until the whole tree is gone; kill on wall time or output.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

#include "cgroup.h"
#include "child_plan.h"
#include "kjsandbox/sandbox.h"
#include "launcher.h"
#include "wire.h"

namespace kjsandbox {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

void make_pipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  read_end.reset(p[0]);
  write_end.reset(p[1]);
}

std::string errno_text(int err) {
  return std::string(strerror(err)) + " (errno " + std::to_string(err) + ")";
}

bool write_file(const std::string& path, const std::string& data, std::string* error) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) {
    *error = "open " + path + ": " + errno_text(errno);
    return false;
  }
  ssize_t n = ::write(fd.get(), data.data(), data.size());
  if (n != static_cast<ssize_t>(data.size())) {
    *error = "write " + path + " (\"" + data.substr(0, data.size() - 1) + "\"): " +
             errno_text(n < 0 ? errno : EIO);
    return false;
  }
  return true;
}

// Single-line maps: inside id -> host id. A privileged parent leaves setgroups allowed so the
// child can drop the supplementary groups it inherited (root's group 0 among them); an
// unprivileged one must deny setgroups before it may write gid_map.
bool write_id_maps(pid_t pid, const Policy& policy, std::string* error) {
  const bool root = ::geteuid() == 0;
  const std::uint32_t host_uid = policy.host_uid.value_or(root ? 65534u : ::getuid());
  const std::uint32_t host_gid = policy.host_gid.value_or(root ? 65534u : ::getgid());
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  if (!root && !write_file(proc + "setgroups", "deny\n", error)) return false;
  if (!write_file(proc + "uid_map",
                  std::to_string(policy.inside_uid) + " " + std::to_string(host_uid) + " 1\n", error))
    return false;
  return write_file(proc + "gid_map",
                    std::to_string(policy.inside_gid) + " " + std::to_string(host_gid) + " 1\n", error);
}

std::string describe_setup_error(const ChildPlan& plan, const Policy& policy, const ChildMessage& m) {
  const Step step = static_cast<Step>(m.step);
  std::string what = step_name(step);
  const auto idx = static_cast<std::size_t>(m.index);
  switch (step) {
    case Step::MountPoint:
    case Step::Bind:
    case Step::BindFlags:
    case Step::Tmpfs:
    case Step::Symlink:
    case Step::Proc:
      if (m.index >= 0 && idx < plan.ops.size()) what += " [" + plan.ops[idx].description + "]";
      break;
    case Step::SealRoot:
      if (m.index >= 0 && idx < plan.seal_readonly.size()) what += std::string(" ") + plan.seal_readonly[idx];
      break;
    case Step::Rlimit:
      if (m.index >= 0 && idx < plan.rlimits.size()) what += std::string(" ") + plan.rlimits[idx].name;
      break;
    case Step::Chdir:
      what += " " + std::string(plan.cwd);
      break;
    case Step::Exec:
      what += " " + policy.argv[0];
      break;
    case Step::Setuid:
      what += " " + std::to_string(policy.inside_uid);
      break;
    case Step::Setgid:
      what += " " + std::to_string(policy.inside_gid);
      break;
    default:
      break;
  }
  return what + ": " + errno_text(m.err);
}

struct Capture {
  std::string* data;
  bool* truncated;
};

}  // namespace

Report run(const Policy& policy) {
  Report report;
  ChildPlan plan;
  if (!build_child_plan(policy, plan, &report.error)) {
    report.outcome = Outcome::SetupFailed;
    return report;
  }

  Fd stdin_fd(::open(policy.stdin_path.empty() ? "/dev/null" : policy.stdin_path.c_str(),
                     O_RDONLY | O_CLOEXEC));
  if (!stdin_fd) {
    report.outcome = Outcome::SetupFailed;
    report.error = "open stdin " + policy.stdin_path + ": " + errno_text(errno);
    return report;
  }
  Fd sync_r, sync_w, status_r, status_w, out_r, out_w, err_r, err_w;
  make_pipe(sync_r, sync_w);
  make_pipe(status_r, status_w);
  make_pipe(out_r, out_w);
  make_pipe(err_r, err_w);
  plan.fd_sync_read = sync_r.get();
  plan.fd_status_write = status_w.get();
  plan.fd_stdin = stdin_fd.get();
  plan.fd_stdout_write = out_w.get();
  plan.fd_stderr_write = err_w.get();

  // The job cgroup: limits and accounting for the whole tree.
  std::unique_ptr<JobCgroup> cgroup;
  if (policy.cgroup.enabled) {
    std::string cg_error;
    cgroup = JobCgroup::create(policy.cgroup, &cg_error);
    if (!cgroup && (!cg_error.empty() || policy.cgroup.memory_bytes || policy.cgroup.pids ||
                    policy.cgroup.cpu_quota)) {
      std::string why;
      cgroup_mode(&why);
      report.outcome = Outcome::SetupFailed;
      report.error = cg_error.empty() ? "cgroup limits requested but " + why : cg_error;
      return report;
    }
  }

  int pidfd_raw = -1;
  const int cgroup_fd = cgroup ? cgroup->clone_into_fd() : -1;
  pid_t pid = clone_sandbox(policy.share_network, &pidfd_raw, cgroup_fd);
  if (pid == 0) sandbox_init_main(plan);  // the child; never returns
  bool need_attach = cgroup && cgroup_fd < 0;
  if (pid < 0 && cgroup_fd >= 0 && errno != ENOMEM && errno != EAGAIN) {
    // A kernel without CLONE_INTO_CGROUP: clone, then attach before releasing the child.
    pid = clone_sandbox(policy.share_network, &pidfd_raw, -1);
    if (pid == 0) sandbox_init_main(plan);
    need_attach = true;
  }
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "clone3");
  Fd pidfd(pidfd_raw);
  const auto clone_time = Clock::now();

  // Our copies of the child's ends go; from here on EOF on a pipe means the tree let go of it.
  sync_r.reset();
  status_w.reset();
  out_w.reset();
  err_w.reset();
  stdin_fd.reset();

  auto kill_tree = [&] { syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0u); };

  auto setup_failed = [&](std::string error) {
    kill_tree();
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    report.outcome = Outcome::SetupFailed;
    report.error = std::move(error);
    return report;
  };
  // Two releases: after the id maps the child builds its root while we attach it to the job
  // cgroup (v1, or v2 without CLONE_INTO_CGROUP); after the attach it may fork the command.
  std::string map_error;
  if (!write_id_maps(pid, policy, &map_error)) return setup_failed("user namespace id maps: " + map_error);
  const char go[2] = {'m', 'c'};
  if (::write(sync_w.get(), &go[0], 1) != 1) return setup_failed("release the child: " + errno_text(errno));
  if (need_attach && !cgroup->attach(pid, &map_error)) return setup_failed(map_error);
  (void)!::write(sync_w.get(), &go[1], 1);
  sync_w.reset();

  enum class Killed { No, Wall, Output } killed = Killed::No;
  const auto deadline = clone_time + policy.wall_limit;
  std::optional<Clock::time_point> exited_at;
  bool have_status = false, have_setup_error = false, have_violation = false;
  ChildMessage setup_error{}, command_status{}, violation{};
  std::vector<std::pair<int, std::uint32_t>> seen_calls;
  std::string status_buf;
  const std::uint64_t limit = policy.output_limit_bytes;
  Capture captures[2] = {{&report.stdout_data, &report.stdout_truncated},
                         {&report.stderr_data, &report.stderr_truncated}};
  Fd* outputs[2] = {&out_r, &err_r};
  std::string chunk(64 << 10, '\0');

  for (;;) {
    pollfd pfds[4];
    int what[4];
    int n = 0;
    auto watch = [&](int fd, int tag) {
      pfds[n] = {fd, POLLIN, 0};
      what[n++] = tag;
    };
    for (int i = 0; i < 2; ++i)
      if (*outputs[i]) watch(outputs[i]->get(), i);
    if (status_r) watch(status_r.get(), 2);
    if (!exited_at) watch(pidfd.get(), 3);
    if (n == 0) break;

    const auto now = Clock::now();
    if (killed == Killed::No && !exited_at && now >= deadline) {
      killed = Killed::Wall;
      kill_tree();
    }
    int timeout_ms;
    if (exited_at) {
      // The namespace is empty once init is gone; only a clone of some other thread of this
      // process can briefly hold a copy of our pipes (it closes them first thing).
      auto left = *exited_at + std::chrono::seconds(2) - now;
      if (left <= Clock::duration::zero()) break;
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    } else if (killed != Killed::No) {
      timeout_ms = -1;  // SIGKILL is on its way; the pidfd will fire
    } else {
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count());
    }
    int r = ::poll(pfds, static_cast<nfds_t>(n), timeout_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "poll");
    }
    for (int i = 0; i < n; ++i) {
      if (!pfds[i].revents) continue;
      if (what[i] == 3) {
        exited_at = Clock::now();
        continue;
      }
      Fd& fd = what[i] == 2 ? status_r : *outputs[what[i]];
      ssize_t got = ::read(fd.get(), chunk.data(), chunk.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fd.reset();
        continue;
      }
      if (what[i] == 2) {
        status_buf.append(chunk.data(), static_cast<std::size_t>(got));
        while (status_buf.size() >= sizeof(ChildMessage)) {
          ChildMessage m;
          std::memcpy(&m, status_buf.data(), sizeof m);
          status_buf.erase(0, sizeof m);
          if (m.kind == ChildMessage::SetupError && !have_setup_error) {
            have_setup_error = true;
            setup_error = m;
          } else if (m.kind == ChildMessage::CommandStatus) {
            have_status = true;
            command_status = m;
          } else if (m.kind == ChildMessage::SeccompViolation && !have_violation) {
            have_violation = true;
            violation = m;
          } else if (m.kind == ChildMessage::SyscallSeen) {
            seen_calls.emplace_back(m.nr, m.arch);
          }
        }
        continue;
      }
      Capture& c = captures[what[i]];
      const std::size_t room = c.data->size() < limit ? limit - c.data->size() : 0;
      const auto take = std::min<std::size_t>(room, static_cast<std::size_t>(got));
      c.data->append(chunk.data(), take);
      if (take < static_cast<std::size_t>(got)) {
        *c.truncated = true;
        if (killed == Killed::No && !exited_at) {
          killed = Killed::Output;
          kill_tree();
        }
      }
    }
  }

  int wstatus = 0;
  struct rusage ru{};
  while (::wait4(pid, &wstatus, 0, &ru) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
  }
  if (!exited_at) exited_at = Clock::now();
  report.wall_seconds = std::chrono::duration<double>(*exited_at - clone_time).count();
  report.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  report.peak_rss_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024u;
  if (cgroup) {
    cgroup->kill_all();  // init is gone, so is its pid namespace; this is belt and braces
    const CgroupStats st = cgroup->stats();
    report.cgroup_used = true;
    report.cgroup_version = cgroup->v2() ? "v2" : "v1";
    report.memory_peak_bytes = st.memory_peak.value_or(0);
    report.oom_killed = st.oom_killed;
    if (st.cpu_seconds) report.cpu_seconds = *st.cpu_seconds;
    cgroup.reset();
  }
  if (have_violation) {
    report.seccomp_syscall = violation.nr;
    report.seccomp_arch = seccomp_arch_name(violation.arch, violation.nr);
    report.seccomp_syscall_name = seccomp_syscall_name(violation.arch, violation.nr);
  }
  for (const auto& [nr, arch] : seen_calls) {
    std::string name = seccomp_syscall_name(arch, nr);
    if (arch != plan.native_arch || (nr & 0x40000000)) name = seccomp_arch_name(arch, nr) + ":" + name;
    report.seccomp_log.push_back(name);
  }
  std::sort(report.seccomp_log.begin(), report.seccomp_log.end());
  report.seccomp_log.erase(std::unique(report.seccomp_log.begin(), report.seccomp_log.end()),
                           report.seccomp_log.end());
  // A command that died of SIGSYS under a kill-process bad-arch action (kernels without
  // user-notification for bad arches) is a violation of an unknown call.
  const bool sigsys = have_status && WIFSIGNALED(command_status.wait_status) &&
                      WTERMSIG(command_status.wait_status) == SIGSYS && plan.seccomp &&
                      plan.seccomp->badarch_kills && !plan.seccomp_log;

  if (report.oom_killed && !have_setup_error) {
    report.outcome = Outcome::MemoryLimit;
  } else if (killed == Killed::Wall) {
    report.outcome = Outcome::WallTimeout;
  } else if (killed == Killed::Output) {
    report.outcome = Outcome::OutputLimit;
  } else if (have_setup_error) {
    report.outcome = Outcome::SetupFailed;
    report.error = describe_setup_error(plan, policy, setup_error);
  } else if (have_violation || sigsys) {
    report.outcome = Outcome::SeccompViolation;
    if (!have_violation) report.seccomp_syscall_name = "unknown (SIGSYS: a non-native ABI)";
  } else if (have_status && WIFEXITED(command_status.wait_status)) {
    report.outcome = Outcome::Exited;
    report.exit_code = WEXITSTATUS(command_status.wait_status);
  } else if (have_status && WIFSIGNALED(command_status.wait_status)) {
    report.outcome = Outcome::Signaled;
    report.signal = WTERMSIG(command_status.wait_status);
  } else if (WIFSIGNALED(wstatus)) {
    // init itself was killed from outside (OOM killer, an operator): the command went with it.
    report.outcome = Outcome::Signaled;
    report.signal = WTERMSIG(wstatus);
    report.error = "sandbox init killed by signal " + std::to_string(report.signal);
  } else {
    report.outcome = Outcome::SetupFailed;
    report.error = "sandbox init exited (status " + std::to_string(WEXITSTATUS(wstatus)) +
                   ") without reporting the command";
  }
  return report;
}

}  // namespace kjsandbox
