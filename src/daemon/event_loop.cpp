// The Daemon's event loop (Boost.Asio, one thread): the heartbeat (node key, archs, admin drain and
// gpu-clear), lease renewal of the entries it holds and of the builds its slots make, cancel
// polling, the systemd watchdog, handing entries back, and the HTTP endpoints.
#include "daemon/daemon.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include "common/log.h"
#include "daemon/held_entry.h"
#include "daemon/liveness.h"
#include "pipeline/kernelbench/build.h"

namespace kj {
using namespace std::chrono_literals;

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

// Every GPU of the node quarantined: it can judge nothing (one of several quarantined is not that).
bool Daemon::gpu_quarantined() const {
  std::set<int> quarantined;
  for (const auto& g : gpu_health_.snapshot())
    if (g.state == GpuState::Quarantined) quarantined.insert(g.gpu);
  const auto& gpus = placement_.gpus();
  return std::all_of(gpus.begin(), gpus.end(), [&](int gpu) { return quarantined.count(gpu) > 0; });
}

nlohmann::json Daemon::gpu_jobs_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [gpu, n] : placement_.running()) j[std::to_string(gpu)] = n;
  return j;
}

}  // namespace kj
