// The Daemon's fetch thread, with its own Redis connection: the reaper (entries idle past the
// lease, from the tenants the housekeeper found them in), the cluster-wide caps, weighted fair
// fetch across tenants under their per-node caps, and handing taken entries to free job slots.
#include "daemon/daemon.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/redis_endpoint.h"
#include "daemon/held_entry.h"
#include "daemon/liveness.h"

namespace kj {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

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
}  // namespace

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

}  // namespace kj
