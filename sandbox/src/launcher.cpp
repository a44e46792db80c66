// Parent side of run(): plan, clone3, id maps, release (run itself), then supervise(): the child
// watched through its pidfd and the stdout/stderr/status pipes until the whole tree is gone, killed
// on wall time, output or cancel; then decide_outcome(): the report's one Outcome.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "cgroup.h"
#include "child_plan.h"
#include "kjsandbox/sandbox.h"
#include "launcher.h"
#include "netns_pool.h"
#include "wire.h"
#include "zygote.h"

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

// One byte to the child's sync pipe. A child that died during setup has closed its end: the write
// must fail with EPIPE, not raise SIGPIPE, which would end the whole calling process (kjudged and
// every job it runs). SIGPIPE is blocked for this thread around the write and a pending one taken.
bool write_sync_byte(int fd, char byte) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t n = ::write(fd, &byte, 1);
  const int err = errno;
  if (n < 0 && err == EPIPE) {
    const timespec none{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &none) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return n == 1;
}

std::string errno_with_number(int err) {
  return std::string(strerror(err)) + " (errno " + std::to_string(err) + ")";
}

bool write_file(const std::string& path, const std::string& data, std::string* error) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) {
    *error = "open " + path + ": " + errno_with_number(errno);
    return false;
  }
  ssize_t n = ::write(fd.get(), data.data(), data.size());
  if (n != static_cast<ssize_t>(data.size())) {
    *error = "write " + path + " (\"" + data.substr(0, data.size() - 1) + "\"): " +
             errno_with_number(n < 0 ? errno : EIO);
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
  // Appended piecewise: GCC 12 -O3 flags `" " + str` with a false -Wrestrict.
  auto add = [&what](const std::string& detail) {
    what += ' ';
    what += detail;
  };
  const auto idx = static_cast<std::size_t>(m.index);
  switch (step) {
    case Step::MountPoint:
    case Step::Bind:
    case Step::BindFlags:
    case Step::Tmpfs:
    case Step::Symlink:
    case Step::Proc:
      if (m.index >= 0 && idx < plan.ops.size()) {
        add("[" + plan.ops[idx].description);
        what += ']';
      }
      break;
    case Step::SealRoot:
      if (m.index >= 0 && idx < plan.seal_readonly.size()) add(plan.seal_readonly[idx]);
      break;
    case Step::Rlimit:
      if (m.index >= 0 && idx < plan.rlimits.size()) add(plan.rlimits[idx].name);
      break;
    case Step::Chdir:
      add(plan.cwd ? std::string(plan.cwd) : policy.cwd);
      break;
    case Step::Exec:
      add(policy.argv[0]);
      break;
    case Step::Setuid:
      add(std::to_string(policy.inside_uid));
      break;
    case Step::Setgid:
      add(std::to_string(policy.inside_gid));
      break;
    default:
      break;
  }
  what += ": ";
  what += errno_with_number(m.err);
  return what;
}

struct Capture {
  std::string* data;
  bool* truncated;
};

// The run's pooled network namespace: back to the pool once the tree is known to be gone
// (`reusable`), otherwise closed.
struct NetnsHold {
  std::optional<PooledNetns> ns;
  bool reusable = false;
  ~NetnsHold() {
    if (!ns) return;
    if (reusable)
      netns_release(*ns);
    else
      netns_discard(*ns);
  }
};

// Readable now (or hung up): a cancel fd that was signalled. POLLNVAL (not an fd) is not a cancel.
bool cancel_signalled(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

std::atomic<int> g_stuck_pending{0};
std::atomic<std::uint64_t> g_via_zygote{0}, g_in_process{0};

// Accounting from the job cgroup (memory peak, OOM kill, CPU time of the whole tree).
void add_cgroup_stats(JobCgroup& cgroup, Report& report) {
  const CgroupStats st = cgroup.stats();
  report.cgroup_used = true;
  report.cgroup_version = cgroup.v2() ? "v2" : "v1";
  report.memory_peak_bytes = st.memory_peak.value_or(0);
  report.oom_killed = st.oom_killed;
  if (st.cpu_seconds) report.cpu_seconds = *st.cpu_seconds;
}

// A tree that outlived kill_grace: a detached thread waits for init (the SIGKILL is pending; it
// dies when it leaves the kernel) and then removes the job cgroup. If no thread can be started
// the pid is left unreaped (and the cgroup removal is tried once, right away).
// `stuck`: counted in stuck_trees_pending() until reaped (a tree abandoned on an exception is not).
void reap_in_background(pid_t pid, int pidfd, std::unique_ptr<JobCgroup> cgroup, bool stuck = true) {
  if (stuck) ++g_stuck_pending;
  try {
    std::thread([pid, pidfd, stuck, cg = std::move(cgroup)]() mutable {
      int st;
      while (::wait4(pid, &st, 0, nullptr) < 0 && errno == EINTR) {
      }
      ::close(pidfd);
      cg.reset();  // kills what is left and removes the directories
      if (stuck) --g_stuck_pending;
    }).detach();
  } catch (const std::system_error&) {
    ::close(pidfd);
    if (stuck) --g_stuck_pending;
  }
}

enum class Killed { No, Wall, Output, Cancel };

// What the child's status pipe said (wire.h's ChildMessage records).
struct ChildMessages {
  std::optional<ChildMessage> setup_error, command_status, violation;
  std::vector<std::pair<int, std::uint32_t>> seen_calls;

  void add(const ChildMessage& m) {
    if (m.kind == ChildMessage::SetupError && !setup_error) setup_error = m;
    else if (m.kind == ChildMessage::CommandStatus) command_status = m;
    else if (m.kind == ChildMessage::SeccompViolation && !violation) violation = m;
    else if (m.kind == ChildMessage::SyscallSeen) seen_calls.emplace_back(m.nr, m.arch);
  }
  bool command_died_of(int sig) const {
    return command_status && WIFSIGNALED(command_status->wait_status) && WTERMSIG(command_status->wait_status) == sig;
  }
};

// How the watch ended: who killed the tree (if anyone), when init exited, whether the tree
// outlived kill_grace after SIGKILL, and what the child reported.
struct Watched {
  Killed killed = Killed::No;
  std::optional<Clock::time_point> exited_at;
  bool stuck = false;
  ChildMessages messages;
};

// The deadline once the wall limit is reached: later by what Policy::wall_extension grants now
// (never earlier than it was), the grant kept in the report.
Clock::time_point extended_deadline(const Policy& policy, Clock::time_point clone_time, Clock::time_point deadline,
                                    Report& report) {
  if (!policy.wall_extension) return deadline;
  const std::chrono::milliseconds extra = std::max(policy.wall_extension(), std::chrono::milliseconds(0));
  const auto later = clone_time + policy.wall_limit + extra;
  if (later <= deadline) return deadline;
  report.wall_extension_seconds = std::chrono::duration<double>(extra).count();
  return later;
}

// The watch: the child's stdout/stderr (into the report, up to the output limit), its status
// pipe and its pidfd, until the whole tree is gone; SIGKILL on wall time, output or cancel.
Watched supervise(const Policy& policy, Fd& out_r, Fd& err_r, Fd& status_r, const Fd& pidfd,
                  Clock::time_point clone_time, Report& report) {
  Watched w;
  auto deadline = clone_time + policy.wall_limit;
  std::optional<Clock::time_point> killed_at;
  bool watch_cancel = policy.cancel_fd >= 0;
  auto kill_for = [&](Killed why) {
    w.killed = why;
    killed_at = Clock::now();
    syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0u);
  };
  std::string status_buf;
  const std::uint64_t limit = policy.output_limit_bytes;
  Capture captures[2] = {{&report.stdout_data, &report.stdout_truncated},
                         {&report.stderr_data, &report.stderr_truncated}};
  Fd* outputs[2] = {&out_r, &err_r};
  std::string chunk(64 << 10, '\0');

  for (;;) {
    pollfd pfds[5];
    int what[5];
    int n = 0;
    auto watch = [&](int fd, int tag) {
      pfds[n] = {fd, POLLIN, 0};
      what[n++] = tag;
    };
    for (int i = 0; i < 2; ++i)
      if (*outputs[i]) watch(outputs[i]->get(), i);
    if (status_r) watch(status_r.get(), 2);
    if (!w.exited_at) watch(pidfd.get(), 3);
    if (n == 0) break;
    // Polled, never read (the caller may share it between runs); not after our kill or the exit.
    if (watch_cancel && w.killed == Killed::No && !w.exited_at) watch(policy.cancel_fd, 4);

    const auto now = Clock::now();
    if (w.killed == Killed::No && !w.exited_at && now >= deadline) {
      deadline = extended_deadline(policy, clone_time, deadline, report);
      if (now >= deadline) kill_for(Killed::Wall);
    }
    int timeout_ms;
    if (w.exited_at) {
      // The namespace is empty once init is gone; only a clone of some other thread of this
      // process can briefly hold a copy of our pipes (it closes them first thing).
      auto left = *w.exited_at + std::chrono::seconds(2) - now;
      if (left <= Clock::duration::zero()) break;
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    } else if (w.killed != Killed::No) {
      // SIGKILL is on its way and the pidfd fires once the whole pid namespace is gone, unless
      // a process is stuck in the kernel (a GPU driver): then we stop waiting after kill_grace.
      auto left = *killed_at + policy.kill_grace - now;
      if (left <= Clock::duration::zero()) {
        w.stuck = true;
        break;
      }
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
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
        w.exited_at = Clock::now();
        continue;
      }
      if (what[i] == 4) {
        if (pfds[i].revents & POLLNVAL) {
          watch_cancel = false;  // not an fd (any more): the run is simply not cancellable
        } else if (w.killed == Killed::No && !w.exited_at) {
          kill_for(Killed::Cancel);
        }
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
          w.messages.add(m);
        }
        continue;
      }
      Capture& c = captures[what[i]];
      const std::size_t room = c.data->size() < limit ? limit - c.data->size() : 0;
      const auto take = std::min<std::size_t>(room, static_cast<std::size_t>(got));
      c.data->append(chunk.data(), take);
      if (take < static_cast<std::size_t>(got)) {
        *c.truncated = true;
        if (w.killed == Killed::No && !w.exited_at) kill_for(Killed::Output);
      }
    }
  }
  return w;
}

// The seccomp facts: the call that violated the policy, and (log mode) every call seen.
void add_seccomp_facts(Report& report, const ChildMessages& m, const ChildPlan& plan) {
  if (m.violation) {
    report.seccomp_syscall = m.violation->nr;
    report.seccomp_arch = seccomp_arch_name(m.violation->arch, m.violation->nr);
    report.seccomp_syscall_name = seccomp_syscall_name(m.violation->arch, m.violation->nr);
  }
  for (const auto& [nr, arch] : m.seen_calls) {
    std::string name = seccomp_syscall_name(arch, nr);
    if (arch != plan.native_arch || (nr & 0x40000000)) name = seccomp_arch_name(arch, nr) + ":" + name;
    report.seccomp_log.push_back(name);
  }
  std::sort(report.seccomp_log.begin(), report.seccomp_log.end());
  report.seccomp_log.erase(std::unique(report.seccomp_log.begin(), report.seccomp_log.end()),
                           report.seccomp_log.end());
}

// The report's one Outcome, in verdict.h's precedence: memory, then our kills, then what the
// child said, then how init itself ended.
void decide_outcome(Report& report, const Watched& w, const ChildPlan& plan, const Policy& policy, int wstatus) {
  const ChildMessages& m = w.messages;
  // A command that died of SIGSYS under a kill-process bad-arch action (kernels without
  // user-notification for bad arches) is a violation of an unknown call.
  const bool sigsys = m.command_died_of(SIGSYS) && plan.seccomp && plan.seccomp->badarch_kills && !plan.seccomp_log;
  const auto status = m.command_status ? m.command_status->wait_status : 0;
  if (report.oom_killed && !m.setup_error) {
    report.outcome = Outcome::MemoryLimit;
  } else if (w.killed == Killed::Wall) {
    report.outcome = Outcome::WallTimeout;
  } else if (w.killed == Killed::Output) {
    report.outcome = Outcome::OutputLimit;
  } else if (w.killed == Killed::Cancel) {
    report.outcome = Outcome::Cancelled;
  } else if (m.setup_error) {
    report.outcome = Outcome::SetupFailed;
    report.error = describe_setup_error(plan, policy, *m.setup_error);
  } else if (m.violation || sigsys) {
    report.outcome = Outcome::SeccompViolation;
    if (!m.violation) report.seccomp_syscall_name = "unknown (SIGSYS: a non-native ABI)";
  } else if (m.command_status && WIFEXITED(status)) {
    report.outcome = Outcome::Exited;
    report.exit_code = WEXITSTATUS(status);
  } else if (m.command_status && WIFSIGNALED(status)) {
    report.outcome = Outcome::Signaled;
    report.signal = WTERMSIG(status);
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
}

// The four pipes between launcher and tree (both ends until the child holds its own) and the
// child's stdin.
struct Pipes {
  Fd sync_r, sync_w, status_r, status_w, out_r, out_w, err_r, err_w, stdin_fd;

  bool open(const Policy& policy, std::string* error) {
    stdin_fd.reset(::open(policy.stdin_path.empty() ? "/dev/null" : policy.stdin_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!stdin_fd) {
      *error = "open stdin " + policy.stdin_path + ": " + errno_with_number(errno);
      return false;
    }
    make_pipe(sync_r, sync_w);
    make_pipe(status_r, status_w);
    make_pipe(out_r, out_w);
    make_pipe(err_r, err_w);
    return true;
  }
  // Our copies of the child's ends go: from then on EOF on a pipe means the tree let go of it.
  void close_child_ends() {
    sync_r.reset();
    status_w.reset();
    out_w.reset();
    err_w.reset();
    stdin_fd.reset();
  }
};

// The job cgroup: limits and accounting for the whole tree. None (and no error) when the policy
// asks for none, or the host has none and no limit needs one.
bool make_cgroup(const Policy& policy, std::unique_ptr<JobCgroup>& cgroup, std::string* error) {
  if (!policy.cgroup.enabled) return true;
  std::string cg_error;
  cgroup = JobCgroup::create(policy.cgroup, &cg_error);
  if (cgroup || (cg_error.empty() && !policy.cgroup.memory_bytes && !policy.cgroup.pids && !policy.cgroup.cpu_quota))
    return true;
  std::string why;
  cgroup_mode(&why);
  *error = cg_error.empty() ? "cgroup limits requested but " + why : cg_error;
  return false;
}

// The sandbox's init, cloned but not yet released.
struct Started {
  pid_t pid = -1;
  int pidfd = -1;
  bool need_attach = false;  // into the job cgroup by the launcher (v1, or no CLONE_INTO_CGROUP)
  ChildPlan plan;            // built here only when cloned here (the zygote builds its own)
  bool have_plan = false;
};

// In-process launch: the plan built here, a pooled network namespace entered for the clone.
// false (error) when the plan cannot be built; throws when clone fails.
bool start_here(const Policy& policy, Pipes& pipes, NetnsHold& netns, int cgroup_fd, Started& s, std::string* error) {
  ChildPlan& plan = s.plan;
  if (!build_child_plan(policy, plan, error)) {
    netns.reusable = true;
    return false;
  }
  s.have_plan = true;
  plan.fd_sync_read = pipes.sync_r.get();
  plan.fd_status_write = pipes.status_w.get();
  plan.fd_stdin = pipes.stdin_fd.get();
  plan.fd_stdout_write = pipes.out_w.get();
  plan.fd_stderr_write = pipes.err_w.get();
  // A pooled network namespace: this thread steps into it for the clone, the child inherits it.
  if (netns.ns && !netns_enter(netns.ns->ns_fd)) netns.ns.reset();  // (closed by ~NetnsHold)
  const bool new_netns = !policy.share_network && !netns.ns;
  s.pid = clone_sandbox(!new_netns, &s.pidfd, cgroup_fd);
  if (s.pid == 0) sandbox_init_main(plan);  // the child; never returns
  if (s.pid < 0 && cgroup_fd >= 0 && errno != ENOMEM && errno != EAGAIN) {
    // A kernel without CLONE_INTO_CGROUP: clone, then attach before releasing the child.
    s.pid = clone_sandbox(!new_netns, &s.pidfd, -1);
    if (s.pid == 0) sandbox_init_main(plan);
    s.need_attach = true;
  }
  const int clone_errno = errno;
  if (netns.ns) netns_leave();
  if (s.pid < 0) {
    netns.reusable = true;  // nothing ever ran in it
    throw std::system_error(clone_errno, std::generic_category(), "clone3");
  }
  ++g_in_process;
  return true;
}

// Cloned by the zygote when it is up (the ChildPlan is then built there), else here. false
// (error) when the child cannot be set up; throws when clone fails.
bool start(const Policy& policy, Pipes& pipes, NetnsHold& netns, int cgroup_fd, Started& s, std::string* error) {
  ZygoteRequest zq;
  zq.policy = &policy;
  zq.fd_sync_read = pipes.sync_r.get();
  zq.fd_status_write = pipes.status_w.get();
  zq.fd_stdin = pipes.stdin_fd.get();
  zq.fd_stdout_write = pipes.out_w.get();
  zq.fd_stderr_write = pipes.err_w.get();
  zq.netns_fd = netns.ns ? netns.ns->ns_fd : -1;
  zq.new_netns = !policy.share_network && !netns.ns;
  zq.cgroup_fd = cgroup_fd;
  const ZygoteReply zr = zygote_launch(zq);
  if (zr.kind == ZygoteReply::Lost) {
    // The zygote died with our request: it may have cloned a child that holds these pipes and
    // sits in that namespace. Launch in-process with fresh ones (that child, never released, exits).
    if (netns.ns) netns_discard(*netns.ns);
    netns.ns = policy.share_network ? std::nullopt : netns_acquire();
    if (!pipes.open(policy, error)) return false;
  }
  if (zr.kind == ZygoteReply::PlanError) {
    netns.reusable = true;
    *error = zr.error;
    return false;
  }
  if (zr.kind == ZygoteReply::CloneError) {
    netns.reusable = true;
    throw std::system_error(zr.clone_errno, std::generic_category(), "clone3 (zygote)");
  }
  if (zr.kind != ZygoteReply::Launched) return start_here(policy, pipes, netns, cgroup_fd, s, error);
  s.pid = zr.pid;
  s.pidfd = zr.pidfd;
  s.need_attach = s.need_attach || zr.need_attach;
  ++g_via_zygote;
  return true;
}

// Two releases: after the id maps the child builds its root while we attach it to the job
// cgroup (v1, or v2 without CLONE_INTO_CGROUP); after the attach it may fork the command.
std::optional<std::string> release(const Policy& policy, const Started& s, Fd& sync_w, JobCgroup* cgroup) {
  std::string error;
  if (!write_id_maps(s.pid, policy, &error)) return "user namespace id maps: " + error;
  if (!write_sync_byte(sync_w.get(), 'm')) return "release the child: " + errno_with_number(errno);
  if (s.need_attach && !cgroup->attach(s.pid, &error)) return error;
  (void)write_sync_byte(sync_w.get(), 'c');  // a child that died meanwhile reports why later
  sync_w.reset();
  return std::nullopt;
}

// Should anything between the clone and the reaping throw, the tree must not outlive run()
// unwatched.
struct Orphan {
  pid_t pid;
  Fd* pidfd;
  bool armed = true;
  ~Orphan() {
    if (!armed) return;
    syscall(SYS_pidfd_send_signal, pidfd->get(), SIGKILL, nullptr, 0u);
    reap_in_background(pid, pidfd->release(), nullptr, false);
  }
};

// The tree outlived SIGKILL by the grace (a process stuck in the kernel): reported, and reaped
// in the background with its cgroup.
void report_stuck(const Policy& policy, const Watched& w, Clock::time_point clone_time, pid_t pid, Fd& pidfd,
                  std::unique_ptr<JobCgroup> cgroup, Report& report) {
  report.outcome = w.killed == Killed::Cancel   ? Outcome::Cancelled
                   : w.killed == Killed::Output ? Outcome::OutputLimit
                                                : Outcome::WallTimeout;
  report.stuck = true;
  report.error = "the sandbox tree did not exit within " + std::to_string(policy.kill_grace.count()) +
                 " ms of SIGKILL (a process stuck in the kernel, e.g. a GPU driver); reaping it in the background";
  report.wall_seconds = std::chrono::duration<double>(Clock::now() - clone_time).count();
  if (cgroup) add_cgroup_stats(*cgroup, report);
  reap_in_background(pid, pidfd.release(), std::move(cgroup));
}

// init reaped: its times and peak, the cgroup's figures (the cgroup kept for reuse when clean),
// then what the child reported decides the outcome.
void report_exit(const Policy& policy, Watched& w, Clock::time_point clone_time, int wstatus, const rusage& ru,
                 std::unique_ptr<JobCgroup> cgroup, Started& s, Report& report) {
  if (!w.exited_at) w.exited_at = Clock::now();
  report.wall_seconds = std::chrono::duration<double>(*w.exited_at - clone_time).count();
  report.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  report.peak_rss_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024u;
  if (cgroup) {
    cgroup->reaped();  // init is gone, so is its pid namespace; this is belt and braces
    add_cgroup_stats(*cgroup, report);
    JobCgroup::recycle(std::move(cgroup));  // kept for a later run when empty and clean, else removed
  }
  // Launched by the zygote: the plan (for error descriptions and seccomp facts) is built here
  // only when needed; it comes out the same, from the same policy.
  const ChildMessages& m = w.messages;
  if (!s.have_plan && (m.setup_error || !m.seen_calls.empty() || m.command_died_of(SIGSYS))) {
    std::string ignored;
    s.have_plan = build_child_plan(policy, s.plan, &ignored);
  }
  add_seccomp_facts(report, m, s.plan);
  decide_outcome(report, w, s.plan, policy, wstatus);
}

}  // namespace

int stuck_trees_pending() { return g_stuck_pending.load(); }

int trim_pools() { return JobCgroup::trim_pool() + netns_trim(); }

LaunchStats launch_stats() {
  LaunchStats s;
  s.via_zygote = g_via_zygote.load();
  s.resumed = resumed_launches();
  s.in_process = g_in_process.load();
  s.zygote_ready = zygote_ready(&s.zygote_pid);
  return s;
}

Report run(const Policy& policy) {
  Report report;
  if (policy.cancel_fd >= 0 && cancel_signalled(policy.cancel_fd)) {
    report.outcome = Outcome::Cancelled;
    report.error = "cancelled before the start";
    return report;
  }
  Pipes pipes;
  std::unique_ptr<JobCgroup> cgroup;
  if (!pipes.open(policy, &report.error) || !make_cgroup(policy, cgroup, &report.error)) {
    report.outcome = Outcome::SetupFailed;
    return report;
  }
  NetnsHold netns;
  if (!policy.share_network) netns.ns = netns_acquire();
  const int cgroup_fd = cgroup ? cgroup->clone_into_fd() : -1;
  Started started;
  started.need_attach = cgroup && cgroup_fd < 0;
  if (!start(policy, pipes, netns, cgroup_fd, started, &report.error)) {
    report.outcome = Outcome::SetupFailed;
    return report;
  }
  const pid_t pid = started.pid;
  Fd pidfd(started.pidfd);
  const auto clone_time = Clock::now();
  Orphan orphan{pid, &pidfd};
  pipes.close_child_ends();

  if (auto error = release(policy, started, pipes.sync_w, cgroup.get())) {
    syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0u);
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    orphan.armed = false;
    netns.reusable = true;
    report.outcome = Outcome::SetupFailed;
    report.error = std::move(*error);
    return report;
  }

  Watched w = supervise(policy, pipes.out_r, pipes.err_r, pipes.status_r, pidfd, clone_time, report);
  if (w.stuck) {
    orphan.armed = false;
    report_stuck(policy, w, clone_time, pid, pidfd, std::move(cgroup), report);
    return report;
  }
  int wstatus = 0;
  struct rusage ru{};
  while (::wait4(pid, &wstatus, 0, &ru) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
  }
  orphan.armed = false;
  netns.reusable = true;  // init is reaped: its pid namespace, and every process in it, is gone
  report_exit(policy, w, clone_time, wstatus, ru, std::move(cgroup), started, report);
  return report;
}

}  // namespace kjsandbox
