// Launch latency of a trivial program: kjsandbox::run() from one long-lived process (as the
// daemon launches jobs) under the full policy, interleaved with `bwrap --unshare-all` spawned
// from the same process, same program. Built with -DKJUDGE_BENCH=ON (sandbox/CMakeLists.txt).
//
//   sandbox_launch_bench [--n N] [--warmup W] [--variants] [--program PATH]
//
// Full policy = kjudge-sandbox's defaults: user/mount/pid/net/ipc/uts/cgroup namespaces, the
// default system binds read-only, tmpfs /tmp and /dev/shm, minimal /dev, masked /proc, rlimits,
// capabilities dropped + securebits + no_new_privs, the default seccomp allow-list enforced,
// a job cgroup with memory 256 MiB (swap off) and pids 64. --variants adds ablation rows (each
// with one layer off) to show where the time goes.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "kjsandbox/sandbox.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Row {
  std::string name;
  std::function<bool()> launch;  // false = failed
  std::vector<double> ms;
};

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()));
  return v[std::min(v.size() - 1, i)];
}

kjsandbox::Policy full_policy(const std::string& program) {
  kjsandbox::Policy p;
  p.argv = {program};
  p.binds = kjsandbox::default_system_binds();
  p.env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  p.cgroup.memory_bytes = 256ull << 20;
  p.cgroup.pids = 64;
  return p;
}

bool run_ok(const kjsandbox::Policy& p) {
  kjsandbox::Report r = kjsandbox::run(p);
  if (!r.ok()) {
    std::fprintf(stderr, "kjsandbox run failed: %s %s\n", kjsandbox::to_string(r.outcome), r.error.c_str());
    return false;
  }
  return true;
}

bool spawn_ok(const std::vector<std::string>& cmd) {
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 1000, warmup = 20;
  bool variants = false;
  std::string program = "/bin/true";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--variants") variants = true;
    else if (a == "--program" && i + 1 < argc) program = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--n N] [--warmup W] [--variants] [--program PATH]\n", argv[0]);
      return 2;
    }
  }
  std::string why;
  if (!kjsandbox::namespaces_available(&why)) {
    std::fprintf(stderr, "namespaces unavailable: %s\n", why.c_str());
    return 1;
  }
  std::string log;
  kjsandbox::cleanup_stale_cgroups(&log);  // as the daemon does once at start

  const kjsandbox::Policy full = full_policy(program);
  const std::vector<std::string> bwrap = {
      "/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
      "--symlink",      "usr/bin",       "/bin",              "--symlink",     "usr/lib",   "/lib",
      "--symlink",      "usr/lib64",     "/lib64",            "--proc",        "/proc",     "--dev",
      "/dev",           "--tmpfs",       "/tmp",              "--",            program};

  std::vector<Row> rows;
  rows.push_back({"kjudge (full policy)", [&] { return run_ok(full); }, {}});
  rows.push_back({"bwrap --unshare-all", [&] { return spawn_ok(bwrap); }, {}});
  if (variants) {
    auto no_cg = full;
    no_cg.cgroup = {};
    no_cg.cgroup.enabled = false;
    auto no_sc = full;
    no_sc.seccomp.mode = kjsandbox::Seccomp::Mode::Off;
    auto share_net = full;
    share_net.share_network = true;
    auto no_mask = full;
    no_mask.mask_proc = false;
    rows.push_back({"  kjudge, no cgroup", [no_cg] { return run_ok(no_cg); }, {}});
    rows.push_back({"  kjudge, seccomp off", [no_sc] { return run_ok(no_sc); }, {}});
    rows.push_back({"  kjudge, host netns", [share_net] { return run_ok(share_net); }, {}});
    rows.push_back({"  kjudge, /proc unmasked", [no_mask] { return run_ok(no_mask); }, {}});
  }
  for (int i = 0; i < warmup; ++i)
    for (auto& r : rows)
      if (!r.launch()) return 1;
  for (int i = 0; i < n; ++i)
    for (auto& r : rows) {
      auto t = Clock::now();
      if (!r.launch()) return 1;
      r.ms.push_back(ms_since(t));
    }

  char host[256] = "?";
  ::gethostname(host, sizeof host);
  std::printf("launches: %d each after %d warm-up, interleaved, one process (wall ms per launch)\n", n, warmup);
  std::printf("kjudge: kjsandbox::run() in-process, argv %s, default binds, memory 256m, pids 64, seccomp enforce\n",
              program.c_str());
  std::printf("bwrap:  posix_spawn");
  for (const auto& a : bwrap) std::printf(" %s", a.c_str());
  std::printf("\ncgroup: %s\n", kjsandbox::cgroup_mode().c_str());
  std::printf("%-26s %8s %8s %8s\n", "", "p50", "p99", "mean");
  for (const auto& r : rows)
    std::printf("%-26s %8.2f %8.2f %8.2f\n", r.name.c_str(), pct(r.ms, 50), pct(r.ms, 99),
                std::accumulate(r.ms.begin(), r.ms.end(), 0.0) / static_cast<double>(r.ms.size()));
  std::printf("ratio p50 kjudge/bwrap: %.2f (target <= 0.60)\n", pct(rows[0].ms, 50) / pct(rows[1].ms, 50));
  return 0;
}
