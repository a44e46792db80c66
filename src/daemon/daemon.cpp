// The Daemon's life: construction, startup (stale cgroups, entries a previous incarnation left,
// the limits kj_submit reads, the timers, the housekeeper, the fetch thread), the drain on
// SIGTERM/SIGINT or `kjudge admin drain`, SIGHUP's reload, and the stop. The event loop's timers
// are in event_loop.cpp, the fetch thread in fetch.cpp, a job slot's work in job_slot.cpp.
#include "daemon/daemon.h"

#include <boost/asio/signal_set.hpp>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "common/log.h"
#include "common/redis_endpoint.h"
#include "daemon/held_entry.h"
#include "daemon/liveness.h"
#include "kjsandbox/policy.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/run/sandbox_profiles.h"
#include "pipeline/run/workspace.h"
#include "pipeline/worker/pool.h"

namespace kj {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Daemon::Held::Held() : cancel_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
Daemon::Held::~Held() {
  if (cancel_fd >= 0) ::close(cancel_fd);
}

Daemon::Daemon(Config cfg, std::function<Config()> reload)
    : cfg_(std::move(cfg)),
      reload_fn_(std::move(reload)),
      slots_(cfg_.workers),
      gpu_health_(sandboxed_canary(cfg_)),
      placement_(node_gpus(cfg_), gpu_health_) {
  metrics_.slots = cfg_.workers;
  for (int gpu : placement_.gpus()) gpu_health_.track(gpu);  // every GPU in /metrics and the heartbeat from the start
  if (cfg_.build.shared) builds_ = std::make_unique<buildfarm::RedisBuildStore>(cfg_, buildfarm::RedisBuildStore::Role::Judge);
}

Daemon::~Daemon() {
  stopping_ = true;
  slot_free_.notify_all();
  if (fetcher_.joinable()) fetcher_.join();
  slots_.join();
}

int Daemon::run() {
  prepare_state_dir(cfg_.state_dir);
  start_harness_zygote(cfg_);  // imports torch once, in the background, for every harness role
  {
    // job cgroups left by a crashed instance; on v2 this also sets up delegation to job cgroups
    std::string cg_log;
    const int removed = kjsandbox::cleanup_stale_cgroups(&cg_log);
    log::info("sandbox.cgroups_cleaned", {{"removed", removed}, {"detail", cg_log}});
  }
  loop_queue_ = std::make_unique<kjqueue::Queue>(redis_endpoint(cfg_.redis), cfg_.redis.partition);
  loop_queue_->load_functions();
  // A previous incarnation of this node (crash, SIGKILL) may have left entries pending on our
  // consumer name: hand them back at once so any node's reaper takes them now, not after a lease.
  {
    std::map<std::pair<std::string, int>, std::vector<std::string>> mine;  // (tenant, lane) -> entries
    for (auto& e : loop_queue_->pending_of(cfg_.node)) mine[{e.tenant, e.lane}].push_back(e.entry_id);
    std::size_t n = 0;
    for (auto& [stream, ids] : mine) {
      loop_queue_->hand_back(stream.first, cfg_.node, ids, cfg_.queue.lease, stream.second);
      n += ids.size();
    }
    if (n) log::warn("daemon.previous_entries_handed_back", {{"entries", n}});
  }
  loop_queue_->command({"DEL", kjqueue::Keys::drain(cfg_.redis.partition, cfg_.node)});
  publish_limits();
  log::info("daemon.started", {{"node", cfg_.node}, {"workers", cfg_.workers}, {"redis", cfg_.redis.url},
                               {"state_dir", cfg_.state_dir.string()}, {"partition", cfg_.redis.partition},
                               {"lease_ms", cfg_.queue.lease.count()}, {"max_deliveries", cfg_.queue.max_deliveries}});

  if (cfg_.metrics.port > 0) {
    http_ = std::make_unique<HttpServer>(ioc_, cfg_.metrics.address, cfg_.metrics.port,
                                         [this](const std::string& t) { return http(t); });
    log::info("metrics.listening", {{"address", cfg_.metrics.address}, {"port", http_->port()}});
  }

  boost::asio::signal_set signals(ioc_, SIGTERM, SIGINT, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      reload();
    } else {
      log::info("daemon.stopping", {{"signal", sig}});
      begin_drain("signal " + std::to_string(sig));
    }
    if (!loop_done_) signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);

  heartbeat();
  lease_timer_.expires_after(cfg_.queue.lease / 3);
  lease_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) renew_leases(); });
  cancel_timer_.expires_after(cfg_.queue.cancel_poll);
  cancel_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) poll_cancels(); });
  if (builds_) renew_build_leases();
  if (sd_watchdog_enabled(0, &watchdog_usec_) > 0 && watchdog_usec_ > 0) watchdog();

  fetch_tick_ms_ = steady_ms();
  housekeeper_ = std::make_unique<Housekeeper>(cfg_, [this](std::size_t n) { metrics_.trimmed += n; });
  housekeeper_->start();
  fetcher_ = std::thread([this] { fetch_loop(); });
  notify("READY=1\nSTATUS=fetching jobs");
  ioc_.run();  // returns once the drain finished (every timer cancelled, the signal set too)

  fetcher_.join();
  housekeeper_->stop();  // released: another node takes over now
  slots_.join();
  stop_trusted_workers();  // their device memory goes back with them
  try {
    loop_queue_->command({"DEL", kjqueue::Keys::node(cfg_.redis.partition, cfg_.node)});
  } catch (const kjqueue::QueueError&) {
  }
  log::info("daemon.stopped", {{"jobs_done", jobs_done_.load()}});
  return 0;
}

// kj_submit refuses payloads over this partition's max_job_bytes (kj:{pN}:config), so an oversized
// job never reaches a stream; kjudged still checks (a node may be configured lower than another).
void Daemon::publish_limits() {
  loop_queue_->command({"HSET", kjqueue::Keys::config(cfg_.redis.partition), "max_job_bytes",
                        std::to_string(cfg_.limits.max_job_bytes), "marker_ttl_s",
                        std::to_string(cfg_.queue.marker_ttl.count())});
}

// Drain: stop fetching; entries taken but not started go back at once (another node's reaper
// claims them at its next pass); running jobs finish up to queue.drain_timeout, after which
// their leases go back too and the process exits.
void Daemon::begin_drain(const std::string& why) {
  if (stopping_.exchange(true)) return;
  notify("STOPPING=1\nSTATUS=draining");
  slot_free_.notify_all();
  log::info("daemon.draining", {{"why", why}, {"timeout_s", cfg_.queue.drain_timeout.count()}});
  drain_deadline_ = Clock::now() + cfg_.queue.drain_timeout;
  drain_tick();
}

void Daemon::drain_tick() {
  // The fetch thread may still add a few entries it was reading when the drain began.
  std::vector<HeldPtr> unstarted;
  unsigned busy;
  {
    std::lock_guard lk(mu_);
    for (auto& h : ready_) {
      held_.erase(held_key(h->d));
      unstarted.push_back(h);
    }
    ready_.clear();
    busy = busy_;
  }
  if (!unstarted.empty()) {
    hand_back(unstarted);
    log::info("daemon.handed_back", {{"entries", unstarted.size()}});
  }
  if (busy == 0 || Clock::now() >= *drain_deadline_) {
    if (busy > 0) {
      auto running = snapshot(true);
      hand_back(running);
      log::warn("daemon.drain_timeout", {{"running", running.size()}});
      log::info("daemon.stopped", {{"jobs_done", jobs_done_.load()}, {"drain_timeout", true}});
      std::fflush(nullptr);
      ::_exit(0);  // running pipeline steps cannot be interrupted; their leases are back
    }
    loop_done_ = true;
    heartbeat_timer_.cancel();
    lease_timer_.cancel();
    cancel_timer_.cancel();
    build_lease_timer_.cancel();
    watchdog_timer_.cancel();
    if (http_) http_->close();
    ioc_.stop();
    return;
  }
  drain_timer_.expires_after(50ms);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) drain_tick(); });
}

void Daemon::reload() {
  if (!reload_fn_) {
    log::info("daemon.reload_skipped", {{"why", "no config file"}});
    return;
  }
  try {
    Config fresh = reload_fn_();
    log::init(fresh.log_level);
    {
      std::lock_guard lk(mu_);
      cfg_.log_level = fresh.log_level;
      cfg_.queue.tenants = fresh.queue.tenants;
    }
    cfg_.queue.max_deliveries = fresh.queue.max_deliveries;
    log::info("daemon.reloaded", {{"log_level", fresh.log_level}, {"tenants", fresh.queue.tenants.size()}});
  } catch (const std::exception& e) {
    log::error("daemon.reload_failed", {{"error", e.what()}});
  }
}

}  // namespace kj
