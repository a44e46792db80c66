// kjudge-sandbox: run one command in a kjsandbox sandbox (a tiny nsjail).
//
//   kjudge-sandbox [--bind SRC[:DST]]... [--bind-rw SRC[:DST]]... [--tmpfs DST[:SIZE]]...
//                  [--cwd DIR] [--env K=V]... [--wall-ms N] [--output-limit N] [--share-net]
//                  [--json] -- /path/to/cmd args...
//
// kjsandbox::default_system_binds() (/usr, /etc/alternatives, /etc/ld.so.cache, /etc/OpenCL,
// /sys/devices/system/cpu) are always bound read-only. The child's stdout/stderr are passed
// through once it is done, then a report goes to stderr. Exit status: the child's own; 128+N
// when it died by signal N; 124 on the wall limit (as timeout(1)); 123 on the output limit;
// 125 when the sandbox could not be set up.
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run a command in a kjudge sandbox (user/mount/pid/net/ipc/uts/cgroup namespaces, "
               "read-only root, limits)."};
  std::vector<std::string> binds, binds_rw, tmpfs, env, command;
  std::string cwd = "/";
  std::uint64_t wall_ms = 10000;
  std::string output_limit = "1m";
  bool share_net = false, json = false;
  app.add_option("--bind", binds, "Read-only bind SRC[:DST]")->allow_extra_args(false)->take_all();
  app.add_option("--bind-rw", binds_rw, "Writable bind SRC[:DST]")->allow_extra_args(false)->take_all();
  app.add_option("--tmpfs", tmpfs, "Extra tmpfs DST[:SIZE] (default size 64m)")->allow_extra_args(false)->take_all();
  app.add_option("--cwd", cwd, "Working directory inside the sandbox")->capture_default_str();
  app.add_option("--env", env, "Environment variable K=V (default: PATH=/usr/local/bin:/usr/bin:/bin)")
      ->allow_extra_args(false)->take_all();
  app.add_option("--wall-ms", wall_ms, "Wall-time limit in milliseconds")->capture_default_str();
  app.add_option("--output-limit", output_limit, "Byte limit for stdout and stderr each")
      ->capture_default_str();
  app.add_flag("--share-net", share_net, "Keep the host's network namespace");
  app.add_flag("--json", json, "Print the report as JSON");
  app.add_option("command", command, "Command (absolute path inside the sandbox) and arguments")
      ->required();
  CLI11_PARSE(app, argc, argv);

  kjsandbox::Policy policy;
  try {
    policy.argv = command;
    policy.binds = kjsandbox::default_system_binds();
    for (const auto& b : binds) policy.binds.push_back(parse_bind(b, false));
    for (const auto& b : binds_rw) policy.binds.push_back(parse_bind(b, true));
    for (const auto& t : tmpfs) {
      auto colon = t.find(':');
      kjsandbox::TmpfsMount m;
      m.target = t.substr(0, colon);
      if (colon != std::string::npos) m.size_bytes = parse_size(t.substr(colon + 1));
      policy.tmpfs.push_back(m);
    }
    for (const auto& e : env) {
      auto eq = e.find('=');
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--env wants K=V, got '" + e + "'");
      policy.env[e.substr(0, eq)] = e.substr(eq + 1);
    }
    if (!policy.env.count("PATH")) policy.env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
    policy.cwd = cwd;
    policy.wall_limit = std::chrono::milliseconds(wall_ms);
    policy.output_limit_bytes = parse_size(output_limit);
    policy.share_network = share_net;
  } catch (const std::exception& e) {
    std::cerr << "kjudge-sandbox: " << e.what() << "\n";
    return 125;
  }

  kjsandbox::Report r;
  try {
    r = kjsandbox::run(policy);
  } catch (const std::exception& e) {
    std::cerr << "kjudge-sandbox: " << e.what() << "\n";
    return 125;
  }
  std::fwrite(r.stdout_data.data(), 1, r.stdout_data.size(), stdout);
  std::fflush(stdout);
  std::fwrite(r.stderr_data.data(), 1, r.stderr_data.size(), stderr);

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
    };
    std::cerr << j.dump() << "\n";
  } else {
    std::cerr << "[kjudge-sandbox] " << kjsandbox::to_string(r.outcome);
    if (r.outcome == kjsandbox::Outcome::Exited) std::cerr << " code=" << r.exit_code;
    if (r.outcome == kjsandbox::Outcome::Signaled) std::cerr << " signal=" << r.signal;
    std::cerr << " wall=" << r.wall_seconds << "s cpu=" << r.cpu_seconds
              << "s peak_rss=" << human_bytes(r.peak_rss_bytes)
              << " stdout=" << human_bytes(r.stdout_data.size()) << (r.stdout_truncated ? " (truncated)" : "")
              << " stderr=" << human_bytes(r.stderr_data.size()) << (r.stderr_truncated ? " (truncated)" : "");
    if (!r.error.empty()) std::cerr << " error: " << r.error;
    std::cerr << "\n";
  }

  switch (r.outcome) {
    case kjsandbox::Outcome::Exited: return r.exit_code;
    case kjsandbox::Outcome::Signaled: return 128 + r.signal;
    case kjsandbox::Outcome::WallTimeout: return 124;
    case kjsandbox::Outcome::OutputLimit: return 123;
    case kjsandbox::Outcome::SetupFailed: return 125;
  }
  return 125;
}
