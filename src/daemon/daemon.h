// kjudged: the event loop (signals, heartbeat, lease renewal, cancel polling, watchdog, /metrics)
// on Boost.Asio; a fetch thread that owns its own Redis connection (fair fetch across tenants,
// the reaper, retry promotion, stream trimming); a pool of job slots that run the pipeline and
// store results. One source file per part: daemon.cpp (startup, drain, reload, stop),
// event_loop.cpp, fetch.cpp, job_slot.cpp; the entries' keys in held_entry.h, the watchdog's
// clock and sd_notify in liveness.h.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "buildfarm/redis_build_store.h"
#include "common/config.h"
#include "daemon/fair.h"
#include "daemon/gpu_health.h"
#include "daemon/gpu_placement.h"
#include "daemon/housekeeper.h"
#include "http/server.h"
#include "daemon/metrics.h"
#include "kjqueue/queue.h"

namespace kj {

class Daemon {
 public:
  // `reload` re-reads the configuration for SIGHUP (empty: SIGHUP only logs).
  explicit Daemon(Config cfg, std::function<Config()> reload = {});
  ~Daemon();
  // Runs until SIGTERM/SIGINT (or an admin drain), then stops fetching, hands back what it has
  // not started, lets running jobs finish (up to queue.drain_timeout) and returns 0.
  int run();

 private:
  // An entry pending on this node's consumer.
  struct Held {
    Held();
    ~Held();
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    kjqueue::Delivery d;
    std::atomic<bool> cancel{false};
    int cancel_fd = -1;  // eventfd: signalled on cancel, watched by the job's sandboxes
    std::atomic<bool> lost{false};
    bool running = false;
    bool cluster_capped = false;  // holds a member of its tenant's running set (kj_fetch admitted it)
    // What its sandboxes that held the GPU went through (set by process, read by check_gpu).
    int gpu = -1;  // the GPU it was placed on (-1: not placed)
    GpuJobOutcome gpu_outcome = GpuJobOutcome::Clean;
    std::string gpu_incident;
    std::chrono::steady_clock::time_point taken = std::chrono::steady_clock::now();
  };
  using HeldPtr = std::shared_ptr<Held>;

  // fetch thread (fetch.cpp)
  void fetch_loop();
  std::optional<std::vector<std::string>> reapable(kjqueue::Queue& q);
  void take(std::vector<kjqueue::Delivery> got, bool front, const std::set<std::string>& cluster_capped);
  void dispatch_ready();
  bool capped(const std::string& tenant) const;  // mu_ held
  // slots (job_slot.cpp)
  void process(const HeldPtr& h, unsigned slot);
  void finish(const HeldPtr& h);
  void check_gpu(const HeldPtr& h);
  int place_job();                              // the job's GPU (least busy usable one); -1 when stopping
  Config config_for_gpu(int gpu) const;          // the node's config with sandbox.gpu_index = gpu
  // event loop (event_loop.cpp)
  void heartbeat();
  void renew_leases();
  void renew_build_leases();
  void poll_cancels();
  void watchdog();
  HttpReply http(const std::string& target);
  std::vector<HeldPtr> snapshot(bool running_only);
  void hand_back(const std::vector<HeldPtr>& items);
  nlohmann::json gpu_jobs_json() const;          // jobs per GPU, for the heartbeat
  bool gpu_quarantined() const;                  // every GPU of the node is quarantined
  // startup, drain and reload, on the event loop (daemon.cpp)
  void publish_limits();  // kj:{pN}:config max_job_bytes, read by kj_submit
  void begin_drain(const std::string& why);
  void drain_tick();
  void reload();

  Config cfg_;
  std::function<Config()> reload_fn_;
  boost::asio::io_context ioc_;
  boost::asio::steady_timer heartbeat_timer_{ioc_}, lease_timer_{ioc_}, cancel_timer_{ioc_}, watchdog_timer_{ioc_},
      drain_timer_{ioc_}, build_lease_timer_{ioc_};
  std::unique_ptr<kjqueue::Queue> loop_queue_;  // used only from the event loop thread
  std::unique_ptr<HttpServer> http_;
  boost::asio::thread_pool slots_;
  std::atomic<bool> stopping_{false};  // no more fetching
  std::atomic<bool> loop_done_{false};
  std::optional<std::chrono::steady_clock::time_point> drain_deadline_;
  std::mutex mu_;  // guards held_, ready_, busy_, running_, fair_
  std::condition_variable slot_free_;
  std::map<std::pair<std::string, std::string>, HeldPtr> held_;  // (stream key, entry id)
  std::deque<HeldPtr> ready_;                                    // taken, not started
  unsigned busy_ = 0;
  std::map<std::string, unsigned> running_;  // per tenant
  FairPicker fair_;
  std::thread fetcher_;
  std::unique_ptr<Housekeeper> housekeeper_;  // promote, trim, the reaper's scan: when elected
  std::atomic<std::uint64_t> jobs_done_{0};
  std::atomic<std::int64_t> fetch_tick_ms_{0};  // steady clock ms of the fetch loop's last turn
  std::atomic<bool> fetch_ok_{false};           // its last Redis call succeeded
  std::uint64_t watchdog_usec_ = 0;
  Metrics metrics_;
  GpuHealth gpu_health_;
  GpuPlacement placement_;  // the node's GPUs (sandbox.gpus), each job on the least busy usable one
  std::unique_ptr<buildfarm::RedisBuildStore> builds_;  // [build] shared: KernelBench builds shared through Redis
};

}  // namespace kj
