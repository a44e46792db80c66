// Launch latency of a trivial program: kjsandbox::run() from one long-lived process (as the
// daemon launches jobs) under the full policy, interleaved with `bwrap --unshare-all` spawned
// from the same process, same program. Built with -DKJUDGE_BENCH=ON (sandbox/CMakeLists.txt).
//
//   sandbox_launch_bench [--n N] [--warmup W] [--variants] [--program PATH] [--cpu M] [--threads T]
//                        [--thread-launches K] [--no-bwrap]
//
// Besides wall time it reports CPU per launch, which is what bounds throughput on a small
// machine: "process" = getrusage(SELF) + getrusage(CHILDREN) around each launch (the caller's
// thread, the sandbox's init and command) + the zygote's CPU (tick-granular: read it over
// many launches); then, per row, M sequential launches measured also
// as "kthreads" (CPU of kernel threads: namespace and mount teardown runs in kworkers, not in
// the process) and "system" (/proc/stat busy time of all CPUs, which includes anything else
// running on the machine). --threads T: K (default 1000) launches of the full policy from T
// threads at once (the daemon's slots): launches/s and CPU per launch.
//
// Full policy = kjudge-sandbox's defaults: user/mount/pid/net/ipc/uts/cgroup namespaces, the
// default system binds read-only, tmpfs /tmp and /dev/shm, minimal /dev, masked /proc, rlimits,
// capabilities dropped + securebits + no_new_privs, the default seccomp allow-list enforced,
// a job cgroup with memory 256 MiB (swap off) and pids 64. --variants adds ablation rows (each
// with one layer off, or one of the launcher's savings undone) to show where the time goes.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
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
  double cpu_ms = 0;  // process CPU (self + children) over the measured launches
};

double tv_ms(const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; }

// utime + stime of a live process, ms (0 if it is gone).
double live_cpu_ms(int pid) {
  static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream ss(text.substr(paren + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) ss >> skip;  // fields 3..13
  unsigned long long ut = 0, st = 0;
  ss >> ut >> st;
  return static_cast<double>(ut + st) / tick * 1e3;
}

// CPU of this process (all threads), of its reaped children and of the launcher's zygote
// (a live child that clones the sandboxes: its CPU is part of each launch), ms.
double process_cpu_ms() {
  rusage self{}, kids{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &kids);
  const int zygote = kjsandbox::launch_stats().zygote_pid;
  return tv_ms(self.ru_utime) + tv_ms(self.ru_stime) + tv_ms(kids.ru_utime) + tv_ms(kids.ru_stime) +
         (zygote > 0 ? live_cpu_ms(zygote) : 0);
}

// CPU of all kernel threads (children of kthreadd), ms; threads that exit in between are lost.
double kthreads_cpu_ms() {
  static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double sum = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream ss(text.substr(paren + 2));
    std::string state;
    long ppid = 0;
    ss >> state >> ppid;
    if (ppid != 2) continue;
    std::string skip;
    for (int i = 0; i < 9; ++i) ss >> skip;  // fields 5..13
    unsigned long long ut = 0, st = 0;
    ss >> ut >> st;
    sum += static_cast<double>(ut + st) / tick * 1e3;
  }
  ::closedir(d);
  return sum;
}

// Busy time of all CPUs from /proc/stat (everything but idle and iowait), ms.
double system_busy_ms() {
  static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  const unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return static_cast<double>(busy) / tick * 1e3;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
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
  int n = 1000, warmup = 20, cpu_n = 300, threads = 0, thread_n = 1000;
  bool variants = false, with_bwrap = true;
  std::string program = "/bin/true";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--variants") variants = true;
    else if (a == "--program" && i + 1 < argc) program = argv[++i];
    else if (a == "--cpu" && i + 1 < argc) cpu_n = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--thread-launches" && i + 1 < argc) thread_n = std::atoi(argv[++i]);
    else if (a == "--no-bwrap") with_bwrap = false;  // for profiling the launcher alone
    else {
      std::fprintf(stderr, "usage: %s [--n N] [--warmup W] [--variants] [--program PATH] [--cpu M] [--threads T] [--thread-launches K] [--no-bwrap]\n",
                   argv[0]);
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
  if (with_bwrap) rows.push_back({"bwrap --unshare-all", [&] { return spawn_ok(bwrap); }, {}});
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
    // The launcher's own savings, one at a time: cloned by this process instead of the zygote,
    // and a fresh network namespace and job cgroup each time instead of pooled ones.
    rows.push_back({"  kjudge, in-process clone", [&] {
                      kjsandbox::set_zygote_enabled(false);
                      const bool ok = run_ok(full);
                      kjsandbox::set_zygote_enabled(true);
                      return ok;
                    }, {}});
    rows.push_back({"  kjudge, no pools", [&] {
                      kjsandbox::trim_pools();
                      return run_ok(full);
                    }, {}});
  }
  for (int i = 0; i < warmup; ++i)
    for (auto& r : rows)
      if (!r.launch()) return 1;
  for (int i = 0; i < n; ++i)
    for (auto& r : rows) {
      const double c0 = process_cpu_ms();
      auto t = Clock::now();
      if (!r.launch()) return 1;
      r.ms.push_back(ms_since(t));
      r.cpu_ms += process_cpu_ms() - c0;
    }
  // Per row, M launches in a row: kernel-thread and whole-machine CPU can only be attributed so.
  struct CpuRow {
    double process = 0, kthreads = 0, system = 0, wall = 0;
  };
  std::vector<CpuRow> cpu_rows(rows.size());
  for (std::size_t k = 0; k < rows.size() && cpu_n > 0; ++k) {
    const double p0 = process_cpu_ms(), k0 = kthreads_cpu_ms(), s0 = system_busy_ms();
    const auto t0 = Clock::now();
    for (int i = 0; i < cpu_n; ++i)
      if (!rows[k].launch()) return 1;
    cpu_rows[k].wall = ms_since(t0) / cpu_n;
    cpu_rows[k].process = (process_cpu_ms() - p0) / cpu_n;
    cpu_rows[k].kthreads = (kthreads_cpu_ms() - k0) / cpu_n;
    cpu_rows[k].system = (system_busy_ms() - s0) / cpu_n;
  }
  double thr_rate = 0, thr_process = 0, thr_kthreads = 0, thr_system = 0;
  int thr_n = 0;
  if (threads > 0) {
    thr_n = std::max(thread_n, threads);
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    const double p0 = process_cpu_ms(), k0 = kthreads_cpu_ms(), s0 = system_busy_ms();
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        while (next++ < thr_n && !failed)
          if (!run_ok(full)) failed = true;
      });
    for (auto& t : pool) t.join();
    if (failed) return 1;
    thr_rate = thr_n / (ms_since(t0) / 1e3);
    thr_process = (process_cpu_ms() - p0) / thr_n;
    thr_kthreads = (kthreads_cpu_ms() - k0) / thr_n;
    thr_system = (system_busy_ms() - s0) / thr_n;
  }

  char host[256] = "?";
  ::gethostname(host, sizeof host);
  std::printf("launches: %d each after %d warm-up, interleaved, one process (wall ms per launch)\n", n, warmup);
  std::printf("kjudge: kjsandbox::run() in-process, argv %s, default binds, memory 256m, pids 64, seccomp enforce\n",
              program.c_str());
  std::printf("bwrap:  posix_spawn");
  for (const auto& a : bwrap) std::printf(" %s", a.c_str());
  std::printf("\ncgroup: %s\n", kjsandbox::cgroup_mode().c_str());
  std::printf("%-26s %8s %8s %8s %8s\n", "", "p50", "p99", "mean", "cpu");
  for (const auto& r : rows)
    std::printf("%-26s %8.2f %8.2f %8.2f %8.2f\n", r.name.c_str(), pct(r.ms, 50), pct(r.ms, 99),
                std::accumulate(r.ms.begin(), r.ms.end(), 0.0) / std::max<double>(1, static_cast<double>(r.ms.size())),
                r.cpu_ms / std::max<double>(1, static_cast<double>(r.ms.size())));
  if (with_bwrap)
    std::printf("ratio p50 kjudge/bwrap: %.2f (target <= 0.60)\n", pct(rows[0].ms, 50) / pct(rows[1].ms, 50));
  std::printf("cpu = process CPU per launch (getrusage self + children), ms\n");
  if (cpu_n > 0) {
    std::printf("\nCPU per launch, %d launches in a row per row (ms; system = all CPUs' busy time, other load included)\n",
                cpu_n);
    std::printf("%-26s %8s %8s %8s %8s\n", "", "wall", "process", "kthreads", "system");
    for (std::size_t k = 0; k < rows.size(); ++k)
      std::printf("%-26s %8.2f %8.2f %8.2f %8.2f\n", rows[k].name.c_str(), cpu_rows[k].wall, cpu_rows[k].process,
                  cpu_rows[k].kthreads, cpu_rows[k].system);
  }
  const auto ls = kjsandbox::launch_stats();
  std::printf("launches via the zygote: %llu, in-process: %llu\n", static_cast<unsigned long long>(ls.via_zygote),
              static_cast<unsigned long long>(ls.in_process));
  if (threads > 0)
    std::printf("\n%d threads x full policy, %d launches: %.1f launches/s; per launch: process %.2f ms, kthreads "
                "%.2f ms, system %.2f ms\n",
                threads, thr_n, thr_rate, thr_process, thr_kthreads, thr_system);
  return 0;
}
