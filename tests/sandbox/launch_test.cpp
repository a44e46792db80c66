// How launches are made cheap without changing what a run sees: the zygote (init is a copy of a
// small helper, not of the caller), pooled network namespaces and pooled v1 job cgroups.
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "cgroup_files.h"
#include "helpers.h"
#include "netns_pool.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;
using Clock = std::chrono::steady_clock;

class SandboxLaunch : public SandboxTest {};

// Runs /bin/true until the zygote is up (it starts in the background at the first run).
bool zygote_up() {
  const auto until = Clock::now() + 10s;
  while (Clock::now() < until) {
    if (kjsandbox::launch_stats().zygote_ready) return true;
    kjsandbox::run(policy_for({"/bin/true"}));
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// The host pid of the sandbox's init while `arg` sleeps in it (the sleep's parent), or 0.
pid_t init_of_sleep(const std::string& arg) {
  const auto until = Clock::now() + 5s;
  while (Clock::now() < until) {
    auto pids = host_pids_with_arg(arg);
    if (!pids.empty()) {
      for (const auto& line : lines(read_file("/proc/" + std::to_string(pids[0]) + "/status")))
        if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
    }
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

// Whether `needle` occurs in any readable mapping of process `pid` (we are root). Huge
// mappings (a sanitizer's shadow memory) are skipped; the heap is not one of them.
bool memory_contains(pid_t pid, const std::string& needle) {
  std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
  for (const auto& line : lines(read_file("/proc/" + std::to_string(pid) + "/maps"))) {
    std::istringstream ss(line);
    std::string range, perms;
    ss >> range >> perms;
    if (perms.empty() || perms[0] != 'r' || line.find("[vvar") != std::string::npos ||
        line.find("[vsyscall]") != std::string::npos)
      continue;
    const auto dash = range.find('-');
    const auto lo = std::stoull(range.substr(0, dash), nullptr, 16), hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (hi - lo > (256ull << 20)) continue;
    std::string carry;
    for (auto at = lo; at < hi;) {
      const auto n = std::min<unsigned long long>(hi - at, 1 << 20);
      std::string buf(n, '\0');
      mem.clear();
      mem.seekg(static_cast<std::streamoff>(at));
      mem.read(buf.data(), static_cast<std::streamsize>(n));
      buf.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, mem.gcount())));
      if (buf.empty()) break;
      const std::string window = carry + buf;
      if (window.find(needle) != std::string::npos) return true;
      carry = window.substr(window.size() - std::min(window.size(), needle.size()));
      at += n;
    }
  }
  return false;
}

std::string random_secret() {
  std::mt19937_64 rng(std::random_device{}());
  std::string s = "kjsbx-secret-";
  for (int i = 0; i < 24; ++i) s += static_cast<char>('a' + rng() % 26);
  return s;
}

TEST_F(SandboxLaunch, ZygoteLaunchesOnceReady) {
  ASSERT_TRUE(zygote_up()) << "the zygote never came up";
  const auto before = kjsandbox::launch_stats();
  EXPECT_GT(before.zygote_pid, 0);
  auto r = kjsandbox::run(shell("echo ok"));
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "ok\n");
  EXPECT_EQ(kjsandbox::launch_stats().via_zygote, before.via_zygote + 1);
}

TEST_F(SandboxLaunch, InitHoldsNothingOfTheCallersMemory) {
  // A secret in this process's heap: an in-process launch copies it into the sandbox's init; a
  // zygote launch does not (init is a copy of the zygote, which never saw it).
  const std::string secret = random_secret();
  auto check = [&](bool zygote) {
    kjsandbox::set_zygote_enabled(zygote);
    const std::string arg = unique_sleep_arg();
    auto p = policy_for({"/bin/sleep", arg});
    p.wall_limit = 10s;
    auto fut = std::async(std::launch::async, [&] { return kjsandbox::run(p); });
    const pid_t init = init_of_sleep(arg);
    const bool found = init > 0 && memory_contains(init, secret);
    const std::string exe = init > 0 ? std::filesystem::read_symlink("/proc/" + std::to_string(init) + "/exe").string() : "";
    for (pid_t pid : host_pids_with_arg(arg)) ::kill(pid, SIGKILL);  // the sleep: the run ends
    fut.get();
    kjsandbox::set_zygote_enabled(true);
    EXPECT_GT(init, 0);
    return std::make_pair(found, exe);
  };
  ASSERT_TRUE(zygote_up());
  const auto [via_zygote, zygote_exe] = check(true);
  EXPECT_FALSE(via_zygote) << "the caller's memory reached the sandbox's init (exe " << zygote_exe << ")";
  const auto [in_process, own_exe] = check(false);
  EXPECT_TRUE(in_process) << "the check cannot see the caller's memory in an in-process init (exe " << own_exe
                          << ")";
}

TEST_F(SandboxLaunch, InProcessWhenDisabled) {
  kjsandbox::set_zygote_enabled(false);
  const auto before = kjsandbox::launch_stats();
  auto r = kjsandbox::run(policy_for({"/bin/true"}));
  kjsandbox::set_zygote_enabled(true);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(kjsandbox::launch_stats().in_process, before.in_process + 1);
}

TEST_F(SandboxLaunch, BadPolicyThroughTheZygoteIsSetupFailed) {
  ASSERT_TRUE(zygote_up());
  auto p = policy_for({"/bin/true"});
  p.binds.push_back({"/nonexistent/kjsbx", "/x", false});
  auto r = kjsandbox::run(p);
  EXPECT_EQ(r.outcome, Outcome::SetupFailed);
  EXPECT_NE(r.error.find("/nonexistent/kjsbx"), std::string::npos) << r.error;
  auto bad_cwd = policy_for({"/bin/true"});
  bad_cwd.cwd = "/no/such/dir";
  auto r2 = kjsandbox::run(bad_cwd);
  EXPECT_EQ(r2.outcome, Outcome::SetupFailed);
  EXPECT_NE(r2.error.find("chdir /no/such/dir"), std::string::npos) << r2.error;
  EXPECT_TRUE(kjsandbox::run(policy_for({"/bin/true"})).ok());
}

TEST_F(SandboxLaunch, ConcurrentRunsThroughTheZygote) {
  ASSERT_TRUE(zygote_up());
  std::vector<std::future<kjsandbox::Report>> runs;
  for (int i = 0; i < 8; ++i)
    runs.push_back(std::async(std::launch::async, [i] { return kjsandbox::run(shell("echo " + std::to_string(i))); }));
  for (int i = 0; i < 8; ++i) {
    auto r = runs[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
    EXPECT_EQ(r.stdout_data, std::to_string(i) + "\n");
  }
}

// Network namespaces come from a pool: the same one for runs in a row, never two at once, and
// never one that still holds a socket.
TEST_F(SandboxLaunch, NetnsPoolReusesOnlyCleanNamespaces) {
  auto ns_of_run = [] {
    auto r = kjsandbox::run(policy_for({"/usr/bin/readlink", "/proc/self/ns/net"}));
    EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
    return r.stdout_data;
  };
  const std::string host = std::filesystem::read_symlink("/proc/self/ns/net").string() + "\n";
  auto probe = kjsandbox::netns_acquire();
  if (!probe) GTEST_SKIP() << "no pooled network namespaces here (unprivileged): CLONE_NEWNET per run";
  kjsandbox::netns_release(*probe);
  kjsandbox::trim_pools();
  const std::string a = ns_of_run(), b = ns_of_run();
  EXPECT_NE(a, host);
  EXPECT_EQ(a, b) << "runs in a row should share the pooled namespace";

  auto slow = std::async(std::launch::async, [&] {
    auto p = shell("readlink /proc/self/ns/net; sleep 0.3");
    return kjsandbox::run(p).stdout_data;
  });
  std::this_thread::sleep_for(100ms);
  const std::string during = ns_of_run();
  EXPECT_NE(slow.get(), during) << "two runs at once shared a namespace";

  // A namespace holding a socket (here: bound by this thread, standing in for one a run left
  // in flight) goes back to the pool only once it is clean.
  kjsandbox::trim_pools();
  auto ns = kjsandbox::netns_acquire();
  ASSERT_TRUE(ns);
  struct stat st{};
  ASSERT_EQ(::fstat(ns->ns_fd, &st), 0);
  const ino_t dirty = st.st_ino;
  ASSERT_TRUE(kjsandbox::netns_enter(ns->ns_fd));
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, "kjsbx-test", 10);
  const int bound = ::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(sa_family_t) + 11);
  kjsandbox::netns_leave();
  ASSERT_EQ(bound, 0);
  kjsandbox::netns_release(*ns);  // dirty: closed, not pooled
  auto next = kjsandbox::netns_acquire();
  ASSERT_TRUE(next);
  ASSERT_EQ(::fstat(next->ns_fd, &st), 0);
  EXPECT_NE(st.st_ino, dirty) << "a namespace holding a socket was reused";
  kjsandbox::netns_release(*next);
  ::close(sock);
}

// v1 job cgroups are pooled: a reused one must take each run's own limits and report each
// run's own usage.
TEST_F(SandboxLaunch, PooledCgroupTakesEachRunsLimitsAndAccounting) {
  if (kjsandbox::cgroup_mode() != "v1") GTEST_SKIP() << "job cgroups are pooled on v1 only";
  kjsandbox::trim_pools();
  auto py = [](const std::string& code) {
    auto p = policy_for({"/bin/sh", "-c", "grep memory /proc/self/cgroup; exec /usr/bin/python3 -c \"$0\"", code});
    return p;
  };
  const std::string alloc200 = "b = bytearray(200 << 20); print(len(b))";
  auto run = [](kjsandbox::Policy p) { return kjsandbox::run(p); };
  auto cgroup_name = [](const kjsandbox::Report& r) { return r.stdout_data.substr(0, r.stdout_data.find('\n')); };

  auto limited = py(alloc200);
  limited.cgroup.memory_bytes = 128ull << 20;
  auto r1 = run(limited);
  EXPECT_EQ(r1.outcome, Outcome::MemoryLimit) << kjsandbox::to_string(r1.outcome) << r1.stderr_data;

  auto unlimited = py(alloc200);
  auto r2 = run(unlimited);
  EXPECT_EQ(r2.outcome, Outcome::Exited) << kjsandbox::to_string(r2.outcome) << r2.stderr_data;
  EXPECT_FALSE(r2.oom_killed) << "the previous run's OOM kill was counted again";
  EXPECT_EQ(cgroup_name(r1), cgroup_name(r2)) << "the cgroup was not reused";
  EXPECT_GT(static_cast<double>(r2.memory_peak_bytes), 200.0 * (1 << 20) * 0.9);
  EXPECT_LT(static_cast<double>(r2.memory_peak_bytes), 200.0 * (1 << 20) * 1.3);

  auto again_limited = py(alloc200);
  again_limited.cgroup.memory_bytes = 64ull << 20;
  auto r3 = run(again_limited);
  EXPECT_EQ(r3.outcome, Outcome::MemoryLimit) << kjsandbox::to_string(r3.outcome);
  EXPECT_EQ(cgroup_name(r2), cgroup_name(r3));

  // CPU time restarts at zero; a small run reports a small peak.
  auto burn = py("import time\nwhile time.process_time() < 0.5: pass");
  auto r4 = run(burn);
  ASSERT_EQ(r4.outcome, Outcome::Exited) << r4.stderr_data;
  EXPECT_GT(r4.cpu_seconds, 0.4);
  auto r5 = run(py("print(1)"));
  ASSERT_EQ(r5.outcome, Outcome::Exited) << r5.stderr_data;
  EXPECT_LT(r5.cpu_seconds, 0.3);
  EXPECT_LT(r5.memory_peak_bytes, 100ull << 20);

  // pids: limited, then not.
  const std::string forks =
      "import os, time\nn = 0\nfor i in range(16):\n  try:\n    pid = os.fork()\n  except OSError:\n    continue\n"
      "  if pid == 0:\n    time.sleep(0.3)\n    os._exit(0)\n  n += 1\nprint(n)";
  auto few = py(forks);
  few.cgroup.pids = 8;
  auto r6 = run(few);
  ASSERT_EQ(r6.outcome, Outcome::Exited) << r6.stderr_data;
  auto many = py(forks);
  auto r7 = run(many);
  ASSERT_EQ(r7.outcome, Outcome::Exited) << r7.stderr_data;
  EXPECT_EQ(cgroup_name(r6), cgroup_name(r7));
  const auto forked = [](const kjsandbox::Report& r) { return std::stoi(lines(r.stdout_data).back()); };
  EXPECT_LT(forked(r6), 8);
  EXPECT_EQ(forked(r7), 16);
  kjsandbox::trim_pools();
}

TEST_F(SandboxLaunch, ForkedChildLaunchesOnItsOwn) {
  // The parent's zygote, pooled namespaces and cgroups stay the parent's: a forked child
  // launches in-process with pools of its own, the parent is unaffected.
  ASSERT_TRUE(zygote_up());
  ASSERT_TRUE(kjsandbox::run(policy_for({"/bin/true"})).ok());
  const auto before = kjsandbox::launch_stats();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto p = shell("echo child");
    p.cgroup.memory_bytes = 64ull << 20;
    auto r = kjsandbox::run(p);
    const auto stats = kjsandbox::launch_stats();
    if (!r.ok() || r.stdout_data != "child\n") ::_exit(1);
    ::_exit(stats.via_zygote == before.via_zygote && stats.in_process == before.in_process + 1 ? 0 : 2);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
  auto r = kjsandbox::run(shell("echo parent"));
  EXPECT_EQ(r.stdout_data, "parent\n") << r.error;
}

TEST_F(SandboxLaunch, ZygoteDyingWithARequestStillRuns) {
  // Stopped, then killed while a request waits for its reply: the run starts over in-process.
  ASSERT_TRUE(zygote_up());
  const pid_t zygote = kjsandbox::launch_stats().zygote_pid;
  ASSERT_GT(zygote, 0);
  ::kill(zygote, SIGSTOP);
  auto fut = std::async(std::launch::async, [] { return kjsandbox::run(shell("echo after")); });
  std::this_thread::sleep_for(200ms);
  ::kill(zygote, SIGKILL);
  auto r = fut.get();
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "after\n");
  EXPECT_TRUE(zygote_up());
}

TEST_F(SandboxLaunch, ZygoteDeathFallsBackInProcess) {
  ASSERT_TRUE(zygote_up());
  const pid_t zygote = kjsandbox::launch_stats().zygote_pid;
  ASSERT_GT(zygote, 0);
  ::kill(zygote, SIGKILL);  // our own helper
  const auto until = Clock::now() + 5s;
  while (kjsandbox::launch_stats().zygote_ready && Clock::now() < until) std::this_thread::sleep_for(10ms);
  const auto before = kjsandbox::launch_stats();
  EXPECT_FALSE(before.zygote_ready);
  auto r = kjsandbox::run(shell("echo still"));
  EXPECT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_EQ(r.stdout_data, "still\n");
  EXPECT_EQ(kjsandbox::launch_stats().in_process, before.in_process + 1);
  // A zygote that died after it worked is replaced at a later run.
  EXPECT_TRUE(zygote_up());
  EXPECT_NE(kjsandbox::launch_stats().zygote_pid, zygote);
}

// A dead process that had this pid may have left kjsbx-<pid>-<n> behind (pids wrap): a new job
// cgroup's name skips every one that exists (its mkdir failed with EEXIST, 2026-12-07).
TEST(SandboxCgroupNames, ALeftoverOfAnEarlierProcessWithThisPidIsSkipped) {
  namespace cg = kjsandbox::cgroup_detail;
  const cg::Hierarchy& h = cg::hierarchy();
  if (!h.usable() || ::geteuid() != 0) GTEST_SKIP() << "needs root and a cgroup hierarchy";
  const std::string first = cg::unused_job_cgroup_name(h);
  const std::string stem = first.substr(0, first.rfind('-') + 1);
  const unsigned n = std::stoul(first.substr(first.rfind('-') + 1));
  std::vector<std::string> bases;
  if (h.v2) bases.push_back(h.v2_base);
  for (const auto& [ctrl, base] : h.v1_base) bases.push_back(base);
  std::vector<std::string> planted;
  for (unsigned k = n + 1; k <= n + 3; ++k)
    for (const auto& base : bases)
      if (const std::string d = base + "/" + stem + std::to_string(k); ::mkdir(d.c_str(), 0755) == 0) planted.push_back(d);
  const std::string next = cg::unused_job_cgroup_name(h);
  for (const auto& d : planted) ::rmdir(d.c_str());
  ASSERT_FALSE(planted.empty());
  EXPECT_EQ(next, stem + std::to_string(n + 4));
}

}  // namespace
}  // namespace kjtest
