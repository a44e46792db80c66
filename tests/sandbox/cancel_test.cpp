// Cancellation through Policy::cancel_fd, and a tree that does not die after SIGKILL
// (Report::stuck, reaped in the background).
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "helpers.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Eventfd {
 public:
  Eventfd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::runtime_error("eventfd");
  }
  ~Eventfd() { ::close(fd_); }
  int fd() const { return fd_; }
  void signal() const {
    const std::uint64_t one = 1;
    if (::write(fd_, &one, sizeof one) != sizeof one) throw std::runtime_error("eventfd write");
  }
  bool readable() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

 private:
  int fd_;
};

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds within) {
  const auto until = Clock::now() + within;
  while (!cond()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class SandboxCancel : public SandboxTest {};

TEST_F(SandboxCancel, CancelFromAnotherThreadKillsTheWholeTree) {
  Eventfd cancel;
  const std::string bg = unique_sleep_arg(), fg = unique_sleep_arg();
  // A double-forked background sleep (reparented to init) and a foreground one.
  auto p = shell("(/bin/sleep " + bg + " &); /bin/sleep " + fg);
  p.wall_limit = 60s;
  p.cancel_fd = cancel.fd();
  std::vector<std::string> cgroups;
  std::vector<pid_t> pids;
  std::thread canceller([&] {
    pid_t b = wait_for_host_process(bg), f = wait_for_host_process(fg);
    if (b) pids.push_back(b);
    if (f) {
      pids.push_back(f);
      cgroups = job_cgroup_dirs(f);
    }
    std::this_thread::sleep_for(200ms);
    cancel.signal();
  });
  const auto t0 = Clock::now();
  auto r = kjsandbox::run(p);
  const double took = seconds_since(t0);
  canceller.join();
  EXPECT_EQ(r.outcome, Outcome::Cancelled) << kjsandbox::to_string(r.outcome) << " " << r.error;
  EXPECT_FALSE(r.stuck);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(pids.size(), 2u) << "the sandboxed sleeps never showed up on the host";
  // Cancelled about 200 ms after the sleeps started; the kill and teardown take well under 1 s.
  EXPECT_LT(took, 2.0);
  EXPECT_LT(r.wall_seconds, 1.5);
  for (pid_t pid : pids) EXPECT_FALSE(exists("/proc/" + std::to_string(pid))) << "pid " << pid << " survived";
  EXPECT_TRUE(host_pids_with_arg(bg).empty());
  EXPECT_TRUE(host_pids_with_arg(fg).empty());
  if (!kjsandbox::cgroup_mode().empty()) {
    EXPECT_FALSE(cgroups.empty()) << "the sleep was in no job cgroup";
  }
  // The job cgroup is empty (it may wait in the pool for reuse); trimmed, it is gone.
  for (const auto& dir : cgroups) EXPECT_EQ(read_file(dir + "/cgroup.procs"), "") << dir;
  kjsandbox::trim_pools();
  for (const auto& dir : cgroups) EXPECT_FALSE(exists(dir)) << dir << " left behind";
  EXPECT_TRUE(cancel.readable()) << "run() consumed the cancel fd";
}

TEST_F(SandboxCancel, AlreadyReadableCancelsPromptly) {
  Eventfd cancel;
  cancel.signal();
  auto p = policy_for({"/bin/sleep", unique_sleep_arg()});
  p.cancel_fd = cancel.fd();
  const auto t0 = Clock::now();
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::Cancelled) << r.error;
  EXPECT_LT(seconds_since(t0), 0.5);
  // One job's eventfd serves all its runs: the next run sees the cancel too.
  EXPECT_TRUE(cancel.readable());
  auto again = kjsandbox::run(p);
  EXPECT_EQ(again.outcome, Outcome::Cancelled) << again.error;
}

TEST_F(SandboxCancel, CancelDuringSetupOrStartIsNotLost) {
  // Signalled from another thread while run() is still building the sandbox: whatever the
  // moment, the run ends Cancelled well before the wall limit.
  for (auto delay : {0ms, 1ms, 3ms}) {
    Eventfd cancel;
    auto p = policy_for({"/bin/sleep", "30"});
    p.cancel_fd = cancel.fd();
    auto fut = std::async(std::launch::async, [&] { return kjsandbox::run(p); });
    std::this_thread::sleep_for(delay);
    cancel.signal();
    auto r = fut.get();
    EXPECT_EQ(r.outcome, Outcome::Cancelled) << "delay " << delay.count() << " ms: " << r.error;
    EXPECT_LT(r.wall_seconds, 1.0);
  }
}

TEST_F(SandboxCancel, UnsignalledCancelFdChangesNothing) {
  Eventfd cancel;
  auto p = shell("echo hi; exit 3");
  p.cancel_fd = cancel.fd();
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_data, "hi\n");
}

TEST_F(SandboxCancel, ClosedPipeWriterCancels) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  auto p = policy_for({"/bin/sleep", "30"});
  p.cancel_fd = fds[0];
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    ::close(fds[1]);  // POLLHUP on the read end
  });
  auto r = kjsandbox::run(p);
  closer.join();
  ::close(fds[0]);
  EXPECT_EQ(r.outcome, Outcome::Cancelled) << r.error;
  EXPECT_LT(r.wall_seconds, 1.0);
}

TEST_F(SandboxCancel, WallLimitStillWinsWhenNotCancelled) {
  Eventfd cancel;
  auto p = policy_for({"/bin/sleep", "30"});
  p.cancel_fd = cancel.fd();
  p.wall_limit = 200ms;
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::WallTimeout) << r.error;
}

// A tree that SIGKILL cannot remove quickly. Faked with the v1 freezer: a frozen task does not
// act on a pending SIGKILL until it is thawed (shown as state D, like a task stuck in a driver).
// cgroup v2's freezer lets SIGKILL through, so there this test has nothing to freeze with.
TEST_F(SandboxCancel, StuckTreeIsReportedAndReapedInTheBackground) {
  if (kjsandbox::cgroup_mode() != "v1" || !cgroup_mounts().count("freezer"))
    GTEST_SKIP() << "needs the cgroup v1 freezer to make a process ignore SIGKILL";
  const std::string arg = unique_sleep_arg();
  auto p = policy_for({"/bin/sleep", arg});
  p.wall_limit = 400ms;
  p.kill_grace = 300ms;
  p.cgroup.memory_bytes = 128ull << 20;
  std::string freezer;
  std::vector<std::string> cgroups;
  pid_t sleeper = 0;
  const int pending_before = kjsandbox::stuck_trees_pending();
  std::thread freeze([&] {
    sleeper = wait_for_host_process(arg);
    if (!sleeper) return;
    cgroups = job_cgroup_dirs(sleeper);
    for (const auto& d : cgroups)
      if (exists(d + "/freezer.state")) freezer = d;
    if (freezer.empty()) return;
    write_file(freezer + "/freezer.state", "FROZEN");
    eventually([&] { return read_file(freezer + "/freezer.state").rfind("FROZEN", 0) == 0; }, 2s);
  });
  auto thaw = [&] {
    if (!freezer.empty()) write_file(freezer + "/freezer.state", "THAWED");
  };
  const auto t0 = Clock::now();
  auto r = kjsandbox::run(p);
  const double took = seconds_since(t0);
  freeze.join();
  ASSERT_NE(sleeper, 0) << "the sleep never showed up on the host";
  ASSERT_FALSE(freezer.empty()) << "the sleep was in no freezer cgroup";
  EXPECT_EQ(r.outcome, Outcome::WallTimeout) << r.error;
  EXPECT_TRUE(r.stuck);
  EXPECT_NE(r.error.find("did not exit"), std::string::npos) << r.error;
  EXPECT_LT(took, 0.4 + 0.3 + 0.7);  // wall limit + grace + slack: the caller was not held
  // Still there (frozen), waited for in the background.
  EXPECT_TRUE(exists("/proc/" + std::to_string(sleeper)));
  EXPECT_EQ(kjsandbox::stuck_trees_pending(), pending_before + 1);
  for (const auto& dir : cgroups) EXPECT_TRUE(exists(dir)) << dir;

  thaw();  // the pending SIGKILL now takes effect: the reaper waits, then removes the cgroup
  EXPECT_TRUE(eventually([&] { return kjsandbox::stuck_trees_pending() == pending_before; }, 5s));
  EXPECT_TRUE(eventually([&] { return !exists("/proc/" + std::to_string(sleeper)); }, 2s));
  for (const auto& dir : cgroups) EXPECT_TRUE(eventually([&] { return !exists(dir); }, 2s)) << dir << " left behind";
}

TEST_F(SandboxCancel, CancelOfAStuckTreeIsStuckCancelled) {
  if (kjsandbox::cgroup_mode() != "v1" || !cgroup_mounts().count("freezer"))
    GTEST_SKIP() << "needs the cgroup v1 freezer to make a process ignore SIGKILL";
  Eventfd cancel;
  const std::string arg = unique_sleep_arg();
  auto p = policy_for({"/bin/sleep", arg});
  p.wall_limit = 30s;
  p.kill_grace = 200ms;
  p.cancel_fd = cancel.fd();
  p.cgroup.memory_bytes = 128ull << 20;
  std::string freezer;
  std::thread freeze([&] {
    pid_t pid = wait_for_host_process(arg);
    if (!pid) return;
    for (const auto& d : job_cgroup_dirs(pid))
      if (exists(d + "/freezer.state")) freezer = d;
    if (freezer.empty()) return;
    write_file(freezer + "/freezer.state", "FROZEN");
    eventually([&] { return read_file(freezer + "/freezer.state").rfind("FROZEN", 0) == 0; }, 2s);
    cancel.signal();
  });
  const auto t0 = Clock::now();
  auto r = kjsandbox::run(p);
  const double took = seconds_since(t0);
  freeze.join();
  ASSERT_FALSE(freezer.empty());
  if (!freezer.empty()) write_file(freezer + "/freezer.state", "THAWED");
  EXPECT_EQ(r.outcome, Outcome::Cancelled) << r.error;
  EXPECT_TRUE(r.stuck);
  EXPECT_LT(took, 3.0);
  EXPECT_TRUE(eventually([&] { return !exists(freezer); }, 5s)) << freezer << " left behind";
}

}  // namespace
}  // namespace kjtest
