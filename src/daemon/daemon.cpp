#include "daemon/daemon.h"

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <google/protobuf/util/time_util.h>
#include <nlohmann/json.hpp>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <algorithm>
#include <set>
#include <variant>

#include "common/job_clock.h"
#include "common/log.h"
#include "common/redis_endpoint.h"
#include "common/sha256.h"
#include "kjsandbox/policy.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/judge.h"
#include "pipeline/verdict/verdict.h"
#include "pipeline/kernelbench/kernelbench_build.h"
#include "pipeline/worker/worker_pool.h"
#include "pipeline/run/sandbox_profiles.h"
#include "pipeline/job/validate.h"
#include "pipeline/run/workspace.h"

namespace kj {
namespace v1 = kjudge::v1;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Each slot thread keeps its own connection (hiredis contexts are not thread-safe).
kjqueue::Queue& slot_queue(const Config& cfg) {
  thread_local std::unique_ptr<kjqueue::Queue> q;
  if (!q) q = std::make_unique<kjqueue::Queue>(redis_endpoint(cfg.redis), cfg.redis.partition);
  return *q;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

// A job the daemon ends before or around the pipeline (pipeline/verdict/verdict.h builds the decision).
v1::Result status_result(const std::string& job_id, const std::string& tenant, const Decision& d,
                         const std::string& worker) {
  v1::Result r = invalid_job_result(job_id, tenant, d.message, worker);
  record_verdict(r, d);
  r.clear_reward();
  r.clear_feedback();
  return r;
}

// A job that named its group (client_meta "group", as kjudge.turns reads it) counts in its batch's
// turn tally; a long name is counted by its hash, which keeps the tenant's hash fields small.
void name_turn(const v1::Result& r, kjqueue::CompleteOptions& opts) {
  const auto g = r.client_meta().find("group");
  if (g == r.client_meta().end() || g->second.empty()) return;
  opts.group = g->second.size() <= 128 ? g->second : "sha256:" + sha256_hex(g->second);
  opts.turn = r.turn_index();
}

// Exponential backoff with full jitter in [base*2^(n-1)/2, base*2^(n-1)], capped.
std::chrono::milliseconds backoff(const QueueConfig& q, unsigned attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double exp = static_cast<double>(q.retry_base.count()) * static_cast<double>(1ull << std::min(attempt - 1, 20u));
  const double cap = std::min(exp, static_cast<double>(q.retry_max.count()));
  std::uniform_real_distribution<double> jitter(cap / 2, cap);
  return std::chrono::milliseconds(static_cast<long long>(jitter(rng)));
}

unsigned weight_of(const QueueConfig& q, const std::string& t) {
  if (auto it = q.tenants.find(t); it != q.tenants.end()) return std::max(1u, it->second.weight);
  if (auto it = q.tenants.find("*"); it != q.tenants.end()) return std::max(1u, it->second.weight);
  return 1;
}

unsigned cap_of(const QueueConfig& q, const std::string& t) {
  if (auto it = q.tenants.find(t); it != q.tenants.end()) return it->second.max_running;
  if (auto it = q.tenants.find("*"); it != q.tenants.end()) return it->second.max_running;
  return 0;
}

void notify(const std::string& state) { sd_notify(0, state.c_str()); }

kjqueue::EntryRef ref_of(const kjqueue::Delivery& d) { return {d.tenant, d.lane, d.entry_id}; }

// Entry ids are unique per stream only: a tenant's lanes are separate streams.
std::pair<std::string, std::string> held_key(const kjqueue::Delivery& d) {
  return {kjqueue::Keys::jobs(d.partition, d.tenant, d.lane), d.entry_id};
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Event loop

void Daemon::heartbeat() {
  if (loop_done_) return;
  try {
    unsigned busy;
    {
      std::lock_guard lk(mu_);
      busy = busy_;
    }
    nlohmann::json info = {{"version", KJUDGE_VERSION}, {"workers", cfg_.workers}, {"busy", busy},
                           {"jobs_done", jobs_done_.load()}, {"pid", ::getpid()}, {"draining", stopping_.load()},
                           {"gpus", gpu_health_.to_json()}, {"gpu_jobs", gpu_jobs_json()}};
    // What this node's CUDA builds target: build nodes (no GPU to ask) build for it.
    const auto arch = kernelbench_cuda_arch_list(cfg_);
    if (!arch.empty()) info["cuda_arch_list"] = arch;
    loop_queue_->heartbeat(cfg_.node, info.dump(), cfg_.heartbeat_ttl);
    // ... and in one small hash, which build nodes read instead of every heartbeat (capacity plan step 3)
    if (!arch.empty()) {
      const auto expiry = std::chrono::duration_cast<std::chrono::milliseconds>(
                              (std::chrono::system_clock::now() + cfg_.heartbeat_ttl).time_since_epoch()).count();
      loop_queue_->command({"HSET", kjqueue::Keys::archs(cfg_.redis.partition), cfg_.node,
                            std::to_string(expiry) + " " + arch});
    }
    notify("STATUS=" + std::string(stopping_ ? "draining" : "fetching") + ", busy " + std::to_string(busy) + "/" +
           std::to_string(cfg_.workers) + ", jobs done " + std::to_string(jobs_done_.load()));
    // `kjudge admin drain <node>` sets this key.
    auto drain = loop_queue_->command({"EXISTS", kjqueue::Keys::drain(cfg_.redis.partition, cfg_.node)});
    if (!stopping_ && !drain.empty() && drain.front() == "1") begin_drain("admin drain");
    // `kjudge admin gpu-clear <node>`: an operator checked the GPU and lifts its quarantine.
    const std::string clear_key = kjqueue::Keys::gpu_clear(cfg_.redis.partition, cfg_.node);
    auto clear = loop_queue_->command({"EXISTS", clear_key});
    if (!clear.empty() && clear.front() == "1") {
      for (const auto& g : gpu_health_.snapshot())
        if (g.state == GpuState::Quarantined) gpu_health_.clear(g.gpu);
      loop_queue_->command({"DEL", clear_key});
    }
    // A quarantined GPU takes no jobs: what this node took but has not started goes back now.
    if (gpu_quarantined()) {
      std::vector<HeldPtr> unstarted;
      {
        std::lock_guard lk(mu_);
        for (auto& h : ready_) {
          held_.erase(held_key(h->d));
          unstarted.push_back(h);
        }
        ready_.clear();
      }
      if (!unstarted.empty()) hand_back(unstarted);
    }
  } catch (const kjqueue::QueueError& e) {
    ++metrics_.redis_errors;
    log::warn("heartbeat.failed", {{"error", e.what()}});
  }
  heartbeat_timer_.expires_after(std::min<std::chrono::milliseconds>(cfg_.heartbeat_ttl / 3, 2s));
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) heartbeat();
  });
}

std::vector<Daemon::HeldPtr> Daemon::snapshot(bool running_only) {
  std::lock_guard lk(mu_);
  std::vector<HeldPtr> out;
  for (auto& [k, h] : held_)
    if (!running_only || h->running) out.push_back(h);
  return out;
}

// The lease heartbeat: re-claim our own pending entries (XCLAIM JUSTID: idle 0, no delivery
// counted) so no reaper takes them. Runs on the event loop, never on a busy slot thread.
void Daemon::renew_leases() {
  auto items = snapshot(false);
  std::map<std::pair<std::string, int>, std::vector<HeldPtr>> by_stream;  // (tenant, lane)
  for (auto& h : items) by_stream[{h->d.tenant, h->d.lane}].push_back(h);
  try {
    for (auto& [stream, hs] : by_stream) {
      const std::string& t = stream.first;
      std::vector<std::string> ids;
      for (auto& h : hs) ids.push_back(h->d.entry_id);
      auto lost = loop_queue_->renew(t, cfg_.node, ids, cfg_.queue.lease, stream.second);
      std::vector<kjqueue::EntryRef> capped_refs;
      for (auto& h : hs)
        if (h->cluster_capped) capped_refs.push_back(ref_of(h->d));
      loop_queue_->renew_running(capped_refs, cfg_.queue.lease);
      metrics_.leases_renewed += ids.size() - lost.size();
      std::set<std::string> lost_set(lost.begin(), lost.end());
      for (auto& h : hs) {
        if (!lost_set.count(h->d.entry_id) || h->lost.exchange(true)) continue;
        // Acked meanwhile (the slot just completed it) is not a loss; the slot removes it.
        bool still_held;
        {
          std::lock_guard lk(mu_);
          still_held = held_.count(held_key(h->d)) > 0;
          if (still_held && !h->running) {  // not started: the other owner runs it
            held_.erase(held_key(h->d));
            std::erase(ready_, h);
          }
        }
        if (still_held) {
          ++metrics_.leases_lost;
          log::warn("lease.lost", {{"tenant", t}, {"entry", h->d.entry_id}, {"job_id", h->d.job_id}});
        }
      }
    }
  } catch (const kjqueue::QueueError& e) {
    ++metrics_.redis_errors;
    log::warn("lease.renew_failed", {{"error", e.what()}});
  }
  if (loop_done_) return;
  lease_timer_.expires_after(cfg_.queue.lease / 3);
  lease_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) renew_leases(); });
}

// The leases of the builds this node's slots make for the shared store ([build] shared).
void Daemon::renew_build_leases() {
  builds_->renew_held();
  if (loop_done_) return;
  build_lease_timer_.expires_after(cfg_.build.lease / 3);
  build_lease_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) renew_build_leases(); });
}

void Daemon::poll_cancels() {
  auto running = snapshot(true);
  if (!running.empty()) {
    std::vector<std::tuple<std::string, std::string, std::string>> q;
    for (auto& h : running) q.emplace_back(h->d.tenant, h->d.job_id, h->d.batch_id);
    try {
      auto flags = loop_queue_->cancelled(q);
      for (std::size_t i = 0; i < flags.size() && i < running.size(); ++i)
        if (flags[i] && !running[i]->cancel.exchange(true)) {
          // wakes every sandbox of the job: its tree is killed, the slot is free within a poll
          const std::uint64_t one = 1;
          if (running[i]->cancel_fd >= 0) (void)!::write(running[i]->cancel_fd, &one, sizeof one);
          log::info("job.cancel_requested", {{"job_id", running[i]->d.job_id}, {"tenant", running[i]->d.tenant}});
        }
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
    }
  }
  if (loop_done_) return;
  cancel_timer_.expires_after(cfg_.queue.cancel_poll);
  cancel_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) poll_cancels(); });
}

// WATCHDOG=1 only while the loop runs (this timer fired) and the fetch thread is turning.
void Daemon::watchdog() {
  const auto fetch_age = steady_ms() - fetch_tick_ms_.load();
  const bool healthy = stopping_ || fetch_age < 30'000;
  if (healthy) notify("WATCHDOG=1");
  else log::error("watchdog.unhealthy", {{"fetch_thread_silent_ms", fetch_age}});
  if (loop_done_) return;
  watchdog_timer_.expires_after(std::chrono::microseconds(watchdog_usec_ / 2));
  watchdog_timer_.async_wait([this](const boost::system::error_code& ec) { if (!ec) watchdog(); });
}

void Daemon::hand_back(const std::vector<HeldPtr>& items) {
  std::vector<kjqueue::EntryRef> capped_refs;
  for (auto& h : items)
    if (h->cluster_capped) capped_refs.push_back(ref_of(h->d));
  try {
    loop_queue_->release_running(capped_refs);  // whoever takes them next counts them again
  } catch (const kjqueue::QueueError& e) {
    ++metrics_.redis_errors;  // they expire with the lease
  }
  std::map<std::pair<std::string, int>, std::vector<std::string>> by_stream;  // (tenant, lane)
  for (auto& h : items) by_stream[{h->d.tenant, h->d.lane}].push_back(h->d.entry_id);
  for (auto& [stream, ids] : by_stream) {
    const std::string& t = stream.first;
    try {
      loop_queue_->hand_back(t, cfg_.node, ids, cfg_.queue.lease, stream.second);
      metrics_.handed_back += ids.size();
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
      log::warn("lease.hand_back_failed", {{"tenant", t}, {"entries", ids.size()}, {"error", e.what()}});
    }
  }
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

HttpReply Daemon::http(const std::string& target) {
  const bool fetch_alive = steady_ms() - fetch_tick_ms_.load() < 30'000;
  if (target == "/livez") return fetch_alive || stopping_ ? HttpReply{200, "ok\n"} : HttpReply{503, "fetch thread stuck\n"};
  if (target == "/readyz") {
    if (stopping_) return {503, "draining\n"};
    if (!fetch_ok_) return {503, "redis not reachable\n"};
    if (gpu_quarantined()) return {503, "every gpu of this node is quarantined\n"};
    return {200, "ready\n"};
  }
  if (target == "/metrics") {
    std::map<std::string, Metrics::TenantGauge> tenants;
    try {
      for (const auto& t : loop_queue_->status().tenants) tenants[t.tenant] = {t.lag, t.pending, t.queued};
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
    }
    {
      std::lock_guard lk(mu_);
      metrics_.busy = busy_;
    }
    return {200, metrics_.render(tenants, !stopping_ && fetch_ok_) + gpu_health_.render_metrics() +
                     placement_.render_metrics() + (builds_ ? builds_->render_metrics() : "")};
  }
  return {404, "not found: /metrics, /livez, /readyz\n"};
}

// ---------------------------------------------------------------------------------------------
// Fetch thread

bool Daemon::capped(const std::string& t) const {
  const unsigned cap = cap_of(cfg_.queue, t);
  if (cap == 0) return false;
  unsigned n = 0;
  if (auto it = running_.find(t); it != running_.end()) n = it->second;
  for (auto& h : ready_)
    if (h->d.tenant == t) ++n;
  return n >= cap;
}

void Daemon::take(std::vector<kjqueue::Delivery> got, bool front, const std::set<std::string>& cluster_capped) {
  std::lock_guard lk(mu_);
  for (auto& d : got) {
    auto h = std::make_shared<Held>();
    h->d = std::move(d);
    h->cluster_capped = cluster_capped.count(h->d.tenant) > 0;
    auto key = held_key(h->d);
    if (held_.count(key)) continue;  // reclaimed what we already hold (our own lease expired)
    held_[key] = h;
    if (front) ready_.push_front(h);
    else ready_.push_back(h);
    ++metrics_.deliveries;
  }
}

// Starts ready entries while slots are free, skipping tenants at their cap (mu_ held by caller? no: takes it).
void Daemon::dispatch_ready() {
  std::lock_guard lk(mu_);
  for (auto it = ready_.begin(); it != ready_.end() && busy_ < cfg_.workers;) {
    HeldPtr h = *it;
    const unsigned cap = cap_of(cfg_.queue, h->d.tenant);
    if (cap > 0 && running_[h->d.tenant] >= cap) {
      ++it;
      continue;
    }
    it = ready_.erase(it);
    h->running = true;
    ++busy_;
    ++running_[h->d.tenant];
    static std::atomic<unsigned> next_slot{0};
    const unsigned slot = next_slot++ % cfg_.workers;
    boost::asio::post(slots_, [this, h, slot] {
      process(h, slot);
      check_gpu(h);
      if (h->gpu >= 0) placement_.release(h->gpu);
      finish(h);
    });
  }
}

// A usable GPU for the job, the least busy: waits while none is (a canary runs, or all are
// quarantined); -1 only when the daemon stops meanwhile (the job is then an INFRA_ERROR, retried).
int Daemon::place_job() {
  for (;;) {
    if (auto gpu = placement_.place(std::chrono::seconds(1))) return *gpu;
    if (stopping_) return -1;
  }
}

// The job's result is stored; its slot stays busy while the canary checks the GPU it faulted,
// hung or was killed on. The canary holds the GPU lock, so it never runs beside another job's timing.
void Daemon::check_gpu(const HeldPtr& h) {
  if (h->gpu_outcome == GpuJobOutcome::Clean || h->gpu < 0) return;
  try {
    GpuLock lock(gpu_lock_file(config_for_gpu(h->gpu)));
    if (!gpu_health_.after_job(h->gpu, h->gpu_outcome, h->gpu_incident))
      log::error("gpu.unusable", {{"gpu", h->gpu}, {"after_job", h->d.job_id}, {"node", cfg_.node}});
  } catch (const std::exception& e) {
    gpu_health_.quarantine(h->gpu, std::string("health check failed: ") + e.what());
  }
}

// Every GPU of the node quarantined: it can judge nothing (one of several quarantined is not that).
bool Daemon::gpu_quarantined() const {
  std::set<int> quarantined;
  for (const auto& g : gpu_health_.snapshot())
    if (g.state == GpuState::Quarantined) quarantined.insert(g.gpu);
  const auto& gpus = placement_.gpus();
  return std::all_of(gpus.begin(), gpus.end(), [&](int gpu) { return quarantined.count(gpu) > 0; });
}

Config Daemon::config_for_gpu(int gpu) const {
  Config c = cfg_;
  c.sandbox.gpu_index = gpu;
  return c;
}

nlohmann::json Daemon::gpu_jobs_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [gpu, n] : placement_.running()) j[std::to_string(gpu)] = n;
  return j;
}

void Daemon::finish(const HeldPtr& h) {
  {
    std::lock_guard lk(mu_);
    held_.erase(held_key(h->d));
    --busy_;
    if (--running_[h->d.tenant] == 0) running_.erase(h->d.tenant);
  }
  slot_free_.notify_all();
}

// The tenants the housekeeper found idle entries in (kj:{pN}:reapable); nullopt while no
// housekeeper scans (none elected yet, or its holder died): then every tenant is looked at.
std::optional<std::vector<std::string>> Daemon::reapable(kjqueue::Queue& q) {
  const auto all = q.command({"HGETALL", kjqueue::Keys::reapable(cfg_.redis.partition)});
  if (all.empty()) return std::nullopt;
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < all.size(); i += 2)
    if (all[i] && *all[i] != "~") out.push_back(*all[i]);
  return out;
}

void Daemon::fetch_loop() {
  std::unique_ptr<kjqueue::Queue> q;
  auto next_reap = Clock::now();  // promote and trim: the elected housekeeper (housekeeper.h)
  auto next_caps = Clock::now();
  std::set<std::string> cluster_capped;  // tenants under a cluster-wide cap (kjudge admin cap)
  bool default_cap = false;              // a "*" cap: every tenant is
  while (!stopping_) {
    fetch_tick_ms_ = steady_ms();
    try {
      if (!q) q = std::make_unique<kjqueue::Queue>(redis_endpoint(cfg_.redis), cfg_.redis.partition);
      const auto now = Clock::now();
      if (now >= next_caps) {
        cluster_capped.clear();
        default_cap = false;
        for (const auto& [t, cap] : q->caps()) {
          if (cap < 0) continue;
          if (t == "*") default_cap = true;
          else cluster_capped.insert(t);
        }
        if (default_cap)
          for (const auto& t : q->tenants()) cluster_capped.insert(t);
        next_caps = now + 1s;
      }
      std::size_t free;
      {
        std::lock_guard lk(mu_);
        free = cfg_.workers > busy_ + ready_.size() ? cfg_.workers - busy_ - ready_.size() : 0;
      }
      if (now >= next_reap) {
        // The reaper: entries idle past the lease (their owner died or hung) come here, ahead
        // of new work. Only as many as we can start, and only from the tenants where the elected
        // housekeeper found some (one HGETALL instead of an XAUTOCLAIM per tenant lane).
        if (free > 0) {
          const auto only = reapable(*q);
          auto got = only ? q->reclaim(cfg_.node, cfg_.queue.lease, free, *only) : q->reclaim(cfg_.node, cfg_.queue.lease, free);
          if (!got.empty()) {
            metrics_.redeliveries += got.size();
            log::info("reaper.claimed", {{"entries", got.size()}});
            // admitted under its cap by the node that died: it keeps its place in the running set
            std::vector<kjqueue::EntryRef> capped_refs;
            for (const auto& d : got)
              if (cluster_capped.count(d.tenant)) capped_refs.push_back(ref_of(d));
            q->renew_running(capped_refs, cfg_.queue.lease, /*add=*/true);
            take(std::move(got), /*front=*/true, cluster_capped);
          }
        }
        next_reap = now + cfg_.queue.reap_interval;
      }
      fetch_ok_ = true;
      if (!placement_.any_usable()) {  // every GPU quarantined (or checked by a canary): take nothing new
        std::this_thread::sleep_for(200ms);
        continue;
      }
      dispatch_ready();

      std::map<std::string, unsigned> weights;  // candidates: tenants with room under their caps
      {
        std::unique_lock lk(mu_);
        free = cfg_.workers > busy_ ? cfg_.workers - busy_ : 0;
        if (free == 0) {
          slot_free_.wait_for(lk, 200ms, [&] { return stopping_ || busy_ < cfg_.workers; });
          continue;
        }
        // every remaining ready entry is capped: fetch for the others
        for (const auto& t : q->tenants())
          if (!capped(t)) weights[t] = weight_of(cfg_.queue, t);
      }
      // Fair read: one pick per free slot by weighted round-robin, COUNT 1 per pick (pipelined).
      std::size_t got_total = 0;
      while (free > 0 && !weights.empty()) {
        std::map<std::string, std::size_t> want;
        {
          std::lock_guard lk(mu_);
          for (std::size_t i = 0; i < free; ++i) ++want[fair_.pick(weights)];
        }
        auto got = q->read_new(cfg_.node, {want.begin(), want.end()}, cfg_.queue.priority_aging, cfg_.queue.lease);
        std::map<std::string, std::size_t> n;
        for (auto& d : got) ++n[d.tenant];
        for (auto& [t, k] : want) {
          if (n[t] < k) {  // nothing (more) queued there: out of this round
            std::lock_guard lk(mu_);
            fair_.refund(t, weights);
            weights.erase(t);
          }
        }
        got_total += got.size();
        free -= std::min(free, got.size());
        take(std::move(got), false, cluster_capped);
        dispatch_ready();
      }
      if (got_total == 0) {
        bool ready_empty;
        std::vector<std::string> all;
        {
          std::lock_guard lk(mu_);
          ready_empty = ready_.empty();
          // Cluster-capped tenants are admitted by kj_fetch only (next turn), never by a plain read.
          for (const auto& t : q->tenants())
            if (!capped(t) && !cluster_capped.count(t)) all.push_back(t);
        }
        auto block = ready_empty ? std::min<std::chrono::milliseconds>(cfg_.queue.reap_interval, 1000ms) : 100ms;
        if (!cluster_capped.empty()) block = std::min<std::chrono::milliseconds>(block, 200ms);  // they are polled
        auto got = q->read_blocking(cfg_.node, all, block);
        take(std::move(got), false, cluster_capped);
      }
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
      fetch_ok_ = false;
      log::error("fetch.failed", {{"error", e.what()}});
      q.reset();
      for (int i = 0; i < 10 && !stopping_; ++i) std::this_thread::sleep_for(100ms);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Slots

void Daemon::process(const HeldPtr& h, unsigned slot) {
  const kjqueue::Delivery& d = h->d;
  const std::string worker = cfg_.node + "/" + std::to_string(slot);
  const auto t0 = Clock::now();
  const unsigned deliveries = d.attempt + d.deliveries;  // across retries
  v1::Result result;
  std::string job_id = d.job_id.empty() ? d.entry_id : d.job_id;
  kjqueue::CompleteOptions opts;
  bool retry = false;

  bool cancelled = false;
  try {
    auto c = slot_queue(cfg_).cancelled({{d.tenant, d.job_id, d.batch_id}});
    cancelled = !c.empty() && c.front();
  } catch (const kjqueue::QueueError& e) {
    ++metrics_.redis_errors;  // unknown: run it; a cancel seen later still turns it into CANCELLED
  }

  if (deliveries > cfg_.queue.max_deliveries) {
    // Delivered too often without a result (nodes died under it, or it keeps failing): stop,
    // and tell the client it was our fault.
    const auto gave_up = "gave up after " + std::to_string(deliveries - 1) + " deliveries without a result";
    result = status_result(job_id, d.tenant, node_fault(gave_up), worker);
    opts.dead_reason = "max deliveries (" + std::to_string(cfg_.queue.max_deliveries) + ") exceeded";
  } else if (cancelled) {
    result = status_result(job_id, d.tenant, ended_by_cancel("cancelled before it started"), worker);
  } else {
    auto decoded = decode_for_judge(d.payload, d.tenant, cfg_.limits, cfg_.testing);
    if (auto* bad = std::get_if<InvalidJob>(&decoded)) {
      result = invalid_job_result(job_id, d.tenant, bad->message, worker);
    } else {
      auto& job = std::get<v1::Job>(decoded);
      job_id = job.job_id();
      if (!d.job_id.empty() && d.job_id != job.job_id()) {
        result = invalid_job_result(d.job_id, d.tenant, "queue entry id field differs from job.job_id", worker);
        job_id = d.job_id;
      } else if (deadline_passed(job, kj::now_timestamp())) {
        result =
            status_result(job.job_id(), d.tenant, ended_by_deadline("deadline passed before the job started"), worker);
      } else {
        if (auto wait = queue_wait_seconds(job, kj::now_timestamp())) metrics_.observe_queue_wait(d.tenant, *wait);
        log::debug("job.started", {{"job_id", job_id}, {"tenant", d.tenant}, {"worker", worker}, {"deliveries", deliveries}});
        const auto j0 = Clock::now();
        SandboxWatch watch;
        watch.cancel_fd = h->cancel_fd;
        h->gpu = place_job();
        watch.gpu_quarantined = [this, gpu = h->gpu] { return gpu_health_.quarantined(gpu); };
        result = h->gpu < 0 ? status_result(job_id, d.tenant, node_fault("no healthy GPU on this node"), worker)
                            : judge(job, JudgeContext{config_for_gpu(h->gpu), worker, &watch, builds_.get(), false, deliveries});
        // a GPU that could not give a run a context is checked as after a fault
        h->gpu_outcome = GpuHealth::classify(result.status() == v1::CUDA_FAULT, watch.gpu_unavailable > 0, false,
                                             watch.gpu_runs_killed > 0, watch.gpu_runs_stuck > 0);
        h->gpu_incident = job_id + ": " + (result.status() == v1::CUDA_FAULT ? result.message() : watch.last_gpu_incident);
        metrics_.judge_seconds.observe(std::chrono::duration<double>(Clock::now() - j0).count());
        if (h->cancel) {
          // Its sandboxes were killed (or it finished just before): whatever the pipeline made of
          // that is not the candidate's verdict.
          result = status_result(job_id, d.tenant, ended_by_cancel("cancelled while running"), worker);
          ++metrics_.cancelled_running;
        } else if (result.status() == v1::INFRA_ERROR) {
          if (deliveries < cfg_.queue.max_deliveries) retry = true;
          else opts.dead_reason = "INFRA_ERROR on delivery " + std::to_string(deliveries) + ": " + result.message();
        }
      }
    }
  }
  result.set_attempt(deliveries);
  if (!d.batch_id.empty() && result.batch_id().empty()) result.set_batch_id(d.batch_id);
  name_turn(result, opts);
  const auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string verdict = v1::Verdict_Name(result.status());

  // Store it. Redis may be down for a while (restart, failover): keep trying while the lease
  // timer keeps the entry ours; give up only on shutdown or after a minute, leaving the entry
  // pending for a reaper.
  const auto give_up = Clock::now() + 60s;
  // Its place in the tenant's cluster-wide running set goes once the entry is acked; if Redis is
  // unreachable now, the member expires with the lease instead.
  auto release_cap = [&] {
    if (!h->cluster_capped) return;
    try {
      slot_queue(cfg_).release_running({ref_of(d)});
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
    }
  };
  for (unsigned attempt = 0;; ++attempt) {
    try {
      const auto c0 = Clock::now();
      if (retry) {
        const auto delay = backoff(cfg_.queue, deliveries);
        slot_queue(cfg_).retry_later(d, job_id, deliveries, std::chrono::system_clock::now() + delay);
        ++metrics_.retries;
        log::warn("job.retry", {{"job_id", job_id}, {"tenant", d.tenant}, {"deliveries", deliveries},
                                {"delay_ms", delay.count()}, {"message", result.message()}});
        release_cap();
        return;
      }
      const bool stored = slot_queue(cfg_).complete(d, job_id, result.SerializeAsString(), verdict, cfg_.result_ttl, opts);
      metrics_.complete_seconds.observe(std::chrono::duration<double>(Clock::now() - c0).count());
      if (stored) metrics_.count_verdict(d.tenant, verdict);
      if (stored && !opts.dead_reason.empty()) {
        ++metrics_.dead_letters;
        log::error("job.dead_letter", {{"job_id", job_id}, {"tenant", d.tenant}, {"reason", opts.dead_reason}});
      }
      log::info("job.done", {{"job_id", job_id}, {"tenant", d.tenant}, {"verdict", verdict}, {"gpu", h->gpu},
                             {"seconds", secs}, {"stored", stored}, {"message", result.message()}});
      ++jobs_done_;
      release_cap();
      return;
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
      log::error("job.complete_failed", {{"job_id", job_id}, {"error", e.what()}, {"attempt", attempt}});
      if (Clock::now() > give_up) return;  // the entry stays pending: a reaper hands it on
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100u << std::min(attempt, 4u), 1000u)));
    }
  }
}

}  // namespace kj
