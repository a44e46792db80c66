// kjudge-gateway: the authenticated HTTP front door of the queue (docs/gateway.md). Tenants send
// jobs with an API token; the gateway checks them against the tenant's limits and writes them with
// kj_submit under its own Redis user, so tenants need no Redis credentials.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "common/config.h"
#include "common/log.h"
#include "common/redis_endpoint.h"
#include "gateway/gateway.h"
#include "gateway/server.h"

namespace {

// SIGTERM/SIGINT are blocked before any thread starts (every thread inherits the mask) and taken
// by a thread of their own, which stops the server.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

std::thread stop_on_signal(sigset_t set, kj::gateway::Server& server) {
  return std::thread([set, &server] {
    int sig = 0;
    sigwait(&set, &sig);
    kj::log::info("gateway.stopping", {{"signal", sig}});
    server.stop();
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjudge-gateway: the authenticated HTTP API in front of kjudge's Redis queue"};
  std::optional<std::string> config_file, redis_url, address, log_level;
  std::optional<int> port;
  app.add_option("-c,--config", config_file, "TOML file: [gateway], [gateway.tenants.<name>], [redis]")
      ->check(CLI::ExistingFile);
  app.add_option("--redis", redis_url, "Redis URL (unix:///path, tcp://host:port, redis+sentinel://s1,s2,s3/kjudge); overrides [redis] url");
  app.add_option("--address", address, "listen address; overrides [gateway] address");
  app.add_option("--port", port, "listen port (0: any free one); overrides [gateway] port")->check(CLI::Range(0, 65535));
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error");
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  // One thread per connection: glibc would give each its own arena (up to 8 per core), each
  // keeping what a large request freed; two arenas keep the gateway's memory near what it holds.
  mallopt(M_ARENA_MAX, 2);
  const sigset_t stop_signals = block_stop_signals();
  try {
    const std::optional<std::filesystem::path> file = config_file ? std::optional<std::filesystem::path>(*config_file) : std::nullopt;
    kj::Config cfg = kj::load_config(file);
    auto gw_cfg = kj::gateway::load_gateway_config(file);
    if (redis_url) cfg.redis.url = *redis_url;
    if (address) gw_cfg.address = *address;
    if (port) gw_cfg.port = *port;
    kj::log::init(log_level.value_or(cfg.log_level));
    kj::gateway::Gateway gateway(std::move(gw_cfg), kj::redis_endpoint(cfg.redis), cfg.redis.partition);
    gateway.start();
    kj::gateway::Server server(gateway);
    auto signals = stop_on_signal(stop_signals, server);
    kj::log::info("gateway.listening", {{"address", gateway.config().address}, {"port", server.port()},
                                        {"redis", cfg.redis.url}, {"tokens", gateway.tokens().size()}});
    server.run();
    signals.join();
    const bool drained = server.wait_idle(gateway.config().drain_timeout);
    kj::log::info("gateway.stopped", {{"drained", drained}});
    std::fflush(nullptr);
    std::_Exit(0);  // connection threads still in a long-poll end with the process
  } catch (const std::exception& e) {
    std::cerr << "kjudge-gateway: " << e.what() << "\n";
    return 1;
  }
}
