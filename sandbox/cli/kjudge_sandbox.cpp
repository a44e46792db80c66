// kjudge-sandbox: run one command in a kjsandbox sandbox (a tiny nsjail).
//
//   kjudge-sandbox [--bind SRC[:DST]]... [--bind-rw SRC[:DST]]... [--tmpfs DST[:SIZE]]...
//                  [--cwd DIR] [--env K=V]... [--wall-ms N] [--output-limit N] [--share-net]
//                  [--seccomp enforce|log|off] [--seccomp-profile NAME] [--allow-syscall NAME]...
//                  [--memory SIZE] [--pids N] [--cpus X] [--no-cgroup]
//                  [--device-profile NAME [--gpu N]] [--json] -- /path/to/cmd args...
//
// kjsandbox::default_system_binds() (/usr, /etc/alternatives, /etc/ld.so.cache, /etc/OpenCL,
// /sys/devices/system/cpu) are always bound read-only. The child's stdout/stderr are passed
// through once it is done, then a report goes to stderr. Exit status: the child's own; 128+N
// when it died by signal N; 124 on the wall limit (as timeout(1)); 123 on the output limit;
// 125 when the sandbox could not be set up; 122 on a seccomp violation; 121 on the memory limit.
// With --seccomp log the system calls outside the allow-list are listed in the report
// ("seccomp_log"), one name each, to grow an allow-list from real runs.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kjsandbox/sandbox.h"

namespace {

std::uint64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = std::stoull(text, &used);
  std::string suffix = text.substr(used);
  if (suffix == "" || suffix == "b" || suffix == "B") return value;
  if (suffix == "k" || suffix == "K") return value << 10;
  if (suffix == "m" || suffix == "M") return value << 20;
  if (suffix == "g" || suffix == "G") return value << 30;
  throw std::invalid_argument("bad size '" + text + "' (use N, Nk, Nm or Ng)");
}

kjsandbox::BindMount parse_bind(const std::string& spec, bool writable) {
  auto colon = spec.find(':');
  if (colon == std::string::npos) return {spec, "", writable};
  return {spec.substr(0, colon), spec.substr(colon + 1), writable};
}

std::string human_bytes(std::uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// The command line, as given.
struct Options {
  std::vector<std::string> binds, binds_rw, tmpfs, env, command;
  std::string cwd = "/";
  std::uint64_t wall_ms = 10000;
  std::string output_limit = "1m";
  bool share_net = false, json = false, no_cgroup = false;
  std::string seccomp_mode = "enforce", seccomp_profile = "default", memory, device_profile;
  std::vector<std::string> allow_syscalls;
  std::uint64_t pids = 0;
  double cpus = 0;
  int gpu = 0;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--bind", o.binds, "Read-only bind SRC[:DST]")->allow_extra_args(false)->take_all();
  app.add_option("--bind-rw", o.binds_rw, "Writable bind SRC[:DST]")->allow_extra_args(false)->take_all();
  app.add_option("--tmpfs", o.tmpfs, "Extra tmpfs DST[:SIZE] (default size 64m)")->allow_extra_args(false)->take_all();
  app.add_option("--cwd", o.cwd, "Working directory inside the sandbox")->capture_default_str();
  app.add_option("--env", o.env, "Environment variable K=V (default: PATH=/usr/local/bin:/usr/bin:/bin)")
      ->allow_extra_args(false)->take_all();
  app.add_option("--wall-ms", o.wall_ms, "Wall-time limit in milliseconds")->capture_default_str();
  app.add_option("--output-limit", o.output_limit, "Byte limit for stdout and stderr each")
      ->capture_default_str();
  app.add_flag("--share-net", o.share_net, "Keep the host's network namespace");
  app.add_flag("--json", o.json, "Print the report as JSON");
  app.add_option("--seccomp", o.seccomp_mode, "System-call filter: enforce, log or off")
      ->check(CLI::IsMember({"enforce", "log", "off"}))->capture_default_str();
  app.add_option("--seccomp-profile", o.seccomp_profile, "Allow-list (sandbox/policies/NAME.txt)")->capture_default_str();
  app.add_option("--allow-syscall", o.allow_syscalls, "Also allow this system call")->allow_extra_args(false)->take_all();
  app.add_option("--memory", o.memory, "cgroup memory limit (swap off), e.g. 512m");
  app.add_option("--pids", o.pids, "cgroup limit on tasks");
  app.add_option("--cpus", o.cpus, "cgroup CPU quota in CPUs");
  app.add_flag("--no-cgroup", o.no_cgroup, "Run without a job cgroup");
  app.add_option("--device-profile", o.device_profile, "Device passthrough profile (nvidia-cuda, opencl, ...)");
  app.add_option("--gpu", o.gpu, "GPU index for the device profile")->capture_default_str();
  app.add_option("command", o.command, "Command (absolute path inside the sandbox) and arguments")
      ->required();
}

// The policy the options ask for; throws on a malformed option.
kjsandbox::Policy policy_of(const Options& o) {
  kjsandbox::Policy policy;
  policy.argv = o.command;
  policy.binds = kjsandbox::default_system_binds();
  for (const auto& b : o.binds) policy.binds.push_back(parse_bind(b, false));
  for (const auto& b : o.binds_rw) policy.binds.push_back(parse_bind(b, true));
  for (const auto& t : o.tmpfs) {
    auto colon = t.find(':');
    kjsandbox::TmpfsMount m;
    m.target = t.substr(0, colon);
    if (colon != std::string::npos) m.size_bytes = parse_size(t.substr(colon + 1));
    policy.tmpfs.push_back(m);
  }
  for (const auto& e : o.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--env wants K=V, got '" + e + "'");
    policy.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  if (!policy.env.count("PATH")) policy.env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  policy.cwd = o.cwd;
  policy.wall_limit = std::chrono::milliseconds(o.wall_ms);
  policy.output_limit_bytes = parse_size(o.output_limit);
  policy.share_network = o.share_net;
  policy.seccomp.mode = o.seccomp_mode == "log"   ? kjsandbox::Seccomp::Mode::Log
                        : o.seccomp_mode == "off" ? kjsandbox::Seccomp::Mode::Off
                                                  : kjsandbox::Seccomp::Mode::Enforce;
  policy.seccomp.profile = o.seccomp_profile;
  policy.seccomp.extra_allow = o.allow_syscalls;
  policy.cgroup.enabled = !o.no_cgroup;
  if (!o.memory.empty()) policy.cgroup.memory_bytes = parse_size(o.memory);
  if (o.pids) policy.cgroup.pids = o.pids;
  if (o.cpus > 0) policy.cgroup.cpu_quota = o.cpus;
  if (!o.device_profile.empty()) {
    auto prof = kjsandbox::load_device_profile(o.device_profile, o.gpu);
    for (const auto& n : prof.notes) std::cerr << "kjudge-sandbox: " << n << "\n";
    kjsandbox::apply_device_profile(prof, policy);
  }
  return policy;
}

// The report on stderr, after the child's own output: one JSON line or one human line.
void print_report(const kjsandbox::Report& r, bool json) {
  if (json) {
    nlohmann::json j = {
        {"outcome", kjsandbox::to_string(r.outcome)},
        {"exit_code", r.exit_code},
        {"signal", r.signal},
        {"wall_seconds", r.wall_seconds},
        {"cpu_seconds", r.cpu_seconds},
        {"peak_rss_bytes", r.peak_rss_bytes},
        {"stdout_bytes", r.stdout_data.size()},
        {"stderr_bytes", r.stderr_data.size()},
        {"stdout_truncated", r.stdout_truncated},
        {"stderr_truncated", r.stderr_truncated},
        {"error", r.error},
        {"stuck", r.stuck},
        {"cgroup", r.cgroup_version},
        {"memory_peak_bytes", r.memory_peak_bytes},
        {"oom_killed", r.oom_killed},
        {"seccomp_syscall", r.seccomp_syscall},
        {"seccomp_syscall_name", r.seccomp_syscall_name},
        {"seccomp_arch", r.seccomp_arch},
        {"seccomp_log", r.seccomp_log},
    };
    std::cerr << j.dump() << "\n";
    return;
  }
  std::cerr << "[kjudge-sandbox] " << kjsandbox::to_string(r.outcome);
  if (r.outcome == kjsandbox::Outcome::Exited) std::cerr << " code=" << r.exit_code;
  if (r.outcome == kjsandbox::Outcome::Signaled) std::cerr << " signal=" << r.signal;
  if (r.outcome == kjsandbox::Outcome::SeccompViolation)
    std::cerr << " syscall=" << r.seccomp_syscall_name << " (" << r.seccomp_arch << " #" << r.seccomp_syscall << ")";
  if (r.cgroup_used) std::cerr << " cgroup=" << r.cgroup_version << " memory_peak=" << human_bytes(r.memory_peak_bytes);
  std::cerr << " wall=" << r.wall_seconds << "s cpu=" << r.cpu_seconds
            << "s peak_rss=" << human_bytes(r.peak_rss_bytes)
            << " stdout=" << human_bytes(r.stdout_data.size()) << (r.stdout_truncated ? " (truncated)" : "")
            << " stderr=" << human_bytes(r.stderr_data.size()) << (r.stderr_truncated ? " (truncated)" : "");
  if (!r.error.empty()) std::cerr << " error: " << r.error;
  std::cerr << "\n";
  for (const auto& name : r.seccomp_log) std::cerr << "[kjudge-sandbox] seccomp-log " << name << "\n";
}

// The exit status (the file's header lists them).
int exit_status(const kjsandbox::Report& r) {
  switch (r.outcome) {
    case kjsandbox::Outcome::Exited: return r.exit_code;
    case kjsandbox::Outcome::Signaled: return 128 + r.signal;
    case kjsandbox::Outcome::WallTimeout: return 124;
    case kjsandbox::Outcome::OutputLimit: return 123;
    case kjsandbox::Outcome::SetupFailed: return 125;
    case kjsandbox::Outcome::SeccompViolation: return 122;
    case kjsandbox::Outcome::MemoryLimit: return 121;
    case kjsandbox::Outcome::Cancelled: return 130;
  }
  return 125;
}

// Job cgroups as `kjudge eval` makes them: started from a shell on cgroup v2, our cgroup holds the
// shell too and cannot delegate (the no-internal-processes rule), so root gets a subtree of its own
// (<cgroup2 mount>/kjudge-dev.<pid>, removed by the next start once we are gone).
bool job_cgroups_ready() {
  const auto cg = kjsandbox::setup_cgroups({.own_subtree = true, .command_line = {}});
  if (cg.ok) return true;
  std::cerr << "kjudge-sandbox: cannot create job cgroups: " << cg.explained()
            << (cg.fix.empty() ? "" : " (or --no-cgroup)") << "\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run a command in a kjudge sandbox (user/mount/pid/net/ipc/uts/cgroup namespaces, "
               "read-only root, limits)."};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  kjsandbox::Policy policy;
  try {
    policy = policy_of(o);
  } catch (const std::exception& e) {
    std::cerr << "kjudge-sandbox: " << e.what() << "\n";
    return 125;
  }

  if (policy.cgroup.enabled && !job_cgroups_ready()) return 125;
  kjsandbox::Report r;
  try {
    kjsandbox::set_zygote_enabled(false);  // one launch: a helper process would only cost
    r = kjsandbox::run(policy);
  } catch (const std::exception& e) {
    std::cerr << "kjudge-sandbox: " << e.what() << "\n";
    return 125;
  }
  std::fwrite(r.stdout_data.data(), 1, r.stdout_data.size(), stdout);
  std::fflush(stdout);
  std::fwrite(r.stderr_data.data(), 1, r.stderr_data.size(), stderr);
  print_report(r, o.json);
  return exit_status(r);
}
