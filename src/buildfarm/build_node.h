// kjudged --role build: a build-only node (no GPU). It takes build requests through its consumer
// group on the tenants' request streams (buildfarm/build_work.h), takes each build's lease in the
// shared store, builds in its compile sandbox and publishes the artifact; the judging nodes take it
// from there. A request is acked once its builds ended (or it needs none): one a build node took and
// never finished (it died) is read again by its next incarnation, or claimed by another build node
// once idle for [build] request_idle_ms. Its CUDA builds target the architectures the judging nodes
// publish (kj:{pN}:archs), unless its config names one. Cancel markers kill a running build;
// deadlines, priority lanes with aging, the
// per-node tenant cap ([tenants.<t>] max_running) and the cluster cap (kjudge admin cap, counted
// over live build leases) apply as they do to judging. SIGTERM/SIGINT or `kjudge admin drain`
// drain: no new builds, running ones finish up to queue.drain_timeout_ms, then their leases go
// back. systemd: READY=1 once Redis answered, WATCHDOG=1 from the loop, STOPPING=1 on drain.
// With [metrics] port set it serves /metrics (its slots, running and finished builds, the shared
// store's counters), /livez (the loop turns) and /readyz (Redis answers, not draining).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "buildfarm/build_work.h"
#include "buildfarm/redis_build_store.h"
#include "common/config.h"
#include "http/server.h"
#include "kjqueue/queue.h"

namespace kj::buildfarm {

class BuildNode {
 public:
  explicit BuildNode(Config cfg);
  ~BuildNode();
  int run();

 private:
  struct Running {
    Running();
    ~Running();
    BuildWork work;
    int cancel_fd = -1;
    bool cancelled = false;
  };
  using RunningPtr = std::shared_ptr<Running>;

  HttpReply http(const std::string& target);
  void tick(kjqueue::Queue& q);
  void heartbeat(kjqueue::Queue& q);
  void adopt_cuda_archs(kjqueue::Queue& q);
  void take_requests(kjqueue::Queue& q, std::size_t free, const std::vector<std::string>& tenants);
  void settle(kjqueue::Queue& q);  // acks the requests whose builds all ended
  void work_ended(const BuildWork& w);  // mu_ held
  void poll_cancels(kjqueue::Queue& q);
  std::size_t dispatch(kjqueue::Queue& q);  // builds started
  std::size_t free_slots();
  bool under_cap(const std::string& tenant);  // mu_ held
  void start(BuildWork work);
  void build(const RunningPtr& r);
  void reap_threads();
  void drain();
  std::vector<RunningPtr> running();

  Config cfg_;
  RedisBuildStore store_;
  std::vector<BuildWork> backlog_;  // read, not started yet (loop thread only)
  bool recovered_ = false;          // this consumer's unacked requests of a previous run were read
  // open requests: name -> (request, builds not ended yet); ended ones wait in to_ack_ (mu_)
  std::map<std::string, std::pair<kjqueue::BuildRequest, int>> open_;
  std::vector<kjqueue::BuildRequest> to_ack_;
  std::vector<std::string> cuda_archs_;  // what CUDA builds target (cuda_arch_lists_to_build); loop thread only
  std::mutex mu_;
  std::map<std::string, RunningPtr> running_;  // content key -> build
  std::map<std::string, unsigned> per_tenant_;
  struct Thread {
    std::thread t;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Thread> threads_;
  std::atomic<std::uint64_t> builds_done_{0};
  std::chrono::steady_clock::time_point next_heartbeat_{}, next_renew_{}, next_cancel_poll_{}, next_watchdog_{},
      next_scan_{}, next_claim_{};
  std::uint64_t watchdog_usec_ = 0;
  bool drain_requested_ = false;  // kjudge admin drain <node>
  // read by the HTTP thread
  std::atomic<std::int64_t> loop_tick_ms_{0};
  std::atomic<bool> redis_ok_{false}, draining_{false};
};

}  // namespace kj::buildfarm
