// kjudged: the kjudge worker daemon.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>

#include "common/config.h"
#include "common/log.h"
#include "common/runtime_dir.h"
#include "buildfarm/build_node.h"
#include "daemon/daemon.h"
#include "daemon/dev_redis.h"
#include "kjsandbox/policy.h"

namespace {

// Job cgroups with memory and pids limits, or no start at all (issue 14): refusing here, with the
// command that fixes it, beats failing every job with INFRA_ERROR after reporting ready.
void setup_cgroups_or_refuse(bool dev) {
  const auto cg = kjsandbox::setup_cgroups({.own_subtree = dev, .command_line = {}});
  if (cg.ok) {
    kj::log::info("sandbox.cgroups_ready", {{"mode", cg.mode}, {"base", cg.base}});
    return;
  }
  const std::string msg = "kjudged cannot create job cgroups: " + cg.explained();
  std::cerr << msg << "\n";
  throw std::runtime_error(msg);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjudged: judges GPU kernel jobs from Redis"};
  std::optional<std::string> config_file, redis_url, runtime_dir, log_level;
  std::optional<unsigned> workers;
  std::optional<std::string> role;
  bool dev = false;
  app.add_option("-c,--config", config_file, "TOML config file (drop-ins: <file>.d/*.toml)")->check(CLI::ExistingFile);
  app.add_flag("--dev", dev, "single-node dev mode: start a private redis-server on a unix socket");
  app.add_option("--runtime-dir", runtime_dir, "dev mode: directory for the socket and state (default $XDG_RUNTIME_DIR/kjudge)");
  app.add_option("--redis", redis_url, "Redis URL (unix:///path, tcp://host:port, redis+sentinel://s1,s2,s3/kjudge); overrides the config");
  app.add_option("--workers", workers, "concurrent jobs")->check(CLI::Range(1u, 1024u));
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error");
  app.add_option("--role", role, "judge (default) or build: a build-only node for KernelBench builds, no GPU "
                                 "(overrides [daemon] role)")->check(CLI::IsMember({"judge", "build"}));
  CLI11_PARSE(app, argc, argv);
  // A daemon must not die of a write to a peer that went away (a sandbox child, a worker, Redis):
  // every write path checks its error instead.
  std::signal(SIGPIPE, SIG_IGN);

  try {
    kj::Config cfg = kj::load_config(config_file ? std::optional<std::filesystem::path>(*config_file) : std::nullopt);
    if (log_level) cfg.log_level = *log_level;
    if (workers) cfg.workers = *workers;
    if (role) cfg.role = *role;
    kj::log::init(cfg.log_level);
    std::optional<kj::DevRedis> dev_redis;
    if (dev) {
      const std::filesystem::path rt = runtime_dir ? std::filesystem::path(*runtime_dir) : kj::default_runtime_dir();
      setup_cgroups_or_refuse(true);  // before redis-server: it must not share our cgroup
      dev_redis.emplace(rt);
      std::string cg_error;
      if (!kjsandbox::move_to_leaf(dev_redis->pid(), "redis", &cg_error))
        kj::log::warn("dev.redis_cgroup", {{"error", cg_error}});
      cfg.redis.url = dev_redis->url();
      if (!config_file) cfg.state_dir = rt / "state";
    }
    if (redis_url) cfg.redis.url = *redis_url;
    // SIGHUP: the same file and drop-ins again, with the command line's overrides on top.
    std::function<kj::Config()> reload;
    if (config_file) {
      reload = [config_file, log_level] {
        kj::Config c = kj::load_config(std::optional<std::filesystem::path>(*config_file));
        if (log_level) c.log_level = *log_level;
        return c;
      };
    }
    if (!dev) setup_cgroups_or_refuse(false);
    if (cfg.role == "build") return kj::buildfarm::BuildNode(std::move(cfg)).run();
    kj::Daemon daemon(std::move(cfg), reload);
    return daemon.run();
  } catch (const std::exception& e) {
    kj::log::error("daemon.fatal", {{"error", e.what()}});
    return 1;
  }
}
