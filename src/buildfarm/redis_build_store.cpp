#include "buildfarm/redis_build_store.h"

#include <poll.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "buildfarm/artifact.h"
#include "common/log.h"
#include "common/prometheus_text.h"
#include "common/redis_endpoint.h"

namespace kj::buildfarm {
using Clock = std::chrono::steady_clock;
using kjqueue::Keys;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(200);

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string owner_id(const std::string& node) {
  std::random_device rd;
  return node + "/" + std::to_string(::getpid()) + "/" + std::to_string(rd());
}

// True once the job's cancel fd is readable (it stays so: the job's sandboxes watch it too).
bool cancelled_within(int fd, std::chrono::milliseconds wait) {
  if (fd < 0) {
    std::this_thread::sleep_for(wait);
    return false;
  }
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) > 0 && (p.revents & POLLIN);
}

std::string text(const std::vector<std::optional<std::string>>& reply) {
  return reply.empty() || !reply.front() ? "" : *reply.front();
}

}  // namespace

// A pooled connection, returned on destruction (dropped after an error: it may be mid-reply).
struct RedisBuildStore::Pooled {
  RedisBuildStore* store;
  std::unique_ptr<kjqueue::Queue> q;
  bool broken = false;
  ~Pooled() {
    if (!q || broken) return;
    std::lock_guard lk(store->mu_);
    store->pool_.push_back(std::move(q));
  }
  kjqueue::Queue& operator*() { return *q; }
  kjqueue::Queue* operator->() { return q.get(); }
};

RedisBuildStore::RedisBuildStore(const Config& cfg, Role role)
    : partition_(cfg.redis.partition), build_(cfg.build), node_(cfg.node), owner_(owner_id(cfg.node)), role_(role),
      local_max_(cfg.build.local_max < 0 ? static_cast<int>(cfg.workers) : cfg.build.local_max) {
  endpoint_ = redis_endpoint(cfg.redis);
  if (!cfg.build.artifact_dir.empty()) files_.emplace(cfg.build.artifact_dir);
}

RedisBuildStore::Pooled RedisBuildStore::borrow() {
  {
    std::lock_guard lk(mu_);
    if (!pool_.empty()) {
      auto q = std::move(pool_.back());
      pool_.pop_back();
      return Pooled{this, std::move(q)};
    }
  }
  return Pooled{this, std::make_unique<kjqueue::Queue>(endpoint_, partition_)};
}

// The artifact's bytes: from Redis, or through the marker from the file store. nullopt with `why`
// empty: nothing there (expired); with `why` set: there but unusable.
std::optional<std::string> RedisBuildStore::fetch_value(kjqueue::Queue& q, const std::string& art, std::string& why) {
  if (files_) {
    const auto value = q.command({"GET", art});
    if (value.empty() || !value.front()) return std::nullopt;
    const auto ref = parse_ref(*value.front());
    if (!ref) {
      if (value.front()->rfind("kjart1\n", 0) == 0) return *value.front();  // an inline one (mixed fleet)
      return why = "not an artifact marker", std::nullopt;
    }
    auto bytes = files_->get(*ref, build_.artifact_max_bytes, why);
    if (bytes) file_bytes_read_ += bytes->size();
    return bytes;
  }
  const auto len = q.command({"STRLEN", art});
  if (text(len).empty() || text(len) == "0") return std::nullopt;
  if (std::stoull(text(len)) > build_.artifact_max_bytes) return why = "larger than artifact_max_bytes", std::nullopt;
  auto value = q.command({"GET", art});
  if (value.empty() || !value.front()) return std::nullopt;  // expired meanwhile
  if (parse_ref(*value.front())) return why = "a file-store marker and no [build] artifact_dir here", std::nullopt;
  return *value.front();
}

// The verified artifact, or nullopt; one that fails its checks is deleted (then rebuilt), never used.
std::optional<SharedBuild> RedisBuildStore::fetch(kjqueue::Queue& q, const std::string& key) {
  const std::string art = Keys::artifact(partition_, key);
  std::string why;
  std::optional<SharedBuild> b;
  if (auto value = fetch_value(q, art, why)) b = unpack_artifact(*value, key, build_.artifact_max_bytes, why);
  else if (why.empty()) return std::nullopt;
  if (b) return b;
  ++rejected_;
  log::warn("build.artifact_rejected", {{"key", key}, {"why", why}});
  if (why.find("no [build] artifact_dir") == std::string::npos) q.command({"DEL", art});  // not ours to judge
  return std::nullopt;
}

std::string RedisBuildStore::acquire(kjqueue::Queue& q, const std::string& key, const std::string& tenant) {
  // the artifact's key too: one published between the caller's fetch and this call is "built"
  const auto r = q.command({"FCALL", "kj_build_lease", "4", Keys::build_lease(partition_, key),
                            Keys::building(partition_, tenant), Keys::caps(partition_),
                            Keys::artifact(partition_, key), "acquire", owner_,
                            std::to_string(build_.lease.count()), tenant, role_ == Role::Build ? "1" : "0"});
  const std::string got = text(r);
  if (got == "ok") {
    std::lock_guard lk(mu_);
    held_[key] = tenant;
  }
  return got;
}

bool RedisBuildStore::builders_alive(kjqueue::Queue& q) {
  const auto n = q.command({"ZCOUNT", Keys::builders(partition_), std::to_string(wall_ms()), "+inf"});
  return !text(n).empty() && text(n) != "0";
}

// A judging node builds what nobody builds while it has local build room; past local_max it leaves
// the work to live build nodes (and builds itself when there are none). The room is taken here, in
// one step (a check, then a count after the lease, let concurrent slots all pass the check); a
// caller that then wins no lease gives it back (unreserve_local).
bool RedisBuildStore::reserve_local(kjqueue::Queue& q, bool may_defer) {
  if (role_ == Role::Build) return true;
  for (int n = local_builds_.load(); n < local_max_;)
    if (local_builds_.compare_exchange_weak(n, n + 1)) return true;
  if (may_defer && builders_alive(q)) return false;
  ++local_builds_;  // past local_max with no build node alive (or none that builds it): build anyway, counted
  return true;
}

void RedisBuildStore::unreserve_local() {
  if (role_ == Role::Judge) --local_builds_;
}

BuildClaim RedisBuildStore::claim(const ClaimRequest& req) {
  const auto t0 = Clock::now();
  auto waited = [&] {
    const auto d = Clock::now() - t0;
    wait_ms_ += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    return std::chrono::duration<double>(d).count();
  };
  for (;;) {
    Pooled q = borrow();
    try {
      if (auto b = fetch(*q, req.key)) {
        ++fetched_;
        return {BuildClaim::Artifact, std::move(b), waited()};
      }
      if (reserve_local(*q, req.build_nodes_build_it)) {
        std::string got;
        try {
          got = acquire(*q, req.key, req.tenant);
        } catch (...) {
          unreserve_local();
          throw;
        }
        if (got == "ok") {
          ++leased_;
          return {BuildClaim::Leased, {}, waited()};
        }
        unreserve_local();
        if (got == "built") continue;  // published since the fetch above: take it now
      }
    } catch (const std::exception& e) {  // Redis down, a reply of the wrong shape: build without sharing
      q.broken = true;
      log::warn("build.store_unavailable", {{"key", req.key}, {"error", e.what()}});
      return {BuildClaim::Unshared, {}, waited()};
    }
    if (req.deadline && std::chrono::system_clock::now() >= *req.deadline) return {BuildClaim::Expired, {}, waited()};
    if (Clock::now() >= req.wait_until) {
      if (req.wait_until > t0) ++gave_up_;  // waited its whole bound (a build node never waits)
      return {BuildClaim::Busy, {}, waited()};
    }
    if (cancelled_within(req.cancel_fd, kPoll)) return {BuildClaim::Cancelled, {}, waited()};
  }
}

// With a file store: the file first (atomic, fsynced), then the marker, so a marker never names a
// file that is not whole. Without: the artifact itself.
void RedisBuildStore::store_value(kjqueue::Queue& q, const std::string& key, const std::string& value) {
  const std::string ttl_ms =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(build_.artifact_ttl).count());
  if (!files_) {
    q.command({"SET", Keys::artifact(partition_, key), value, "PX", ttl_ms});
    return;
  }
  const ArtifactRef ref = files_->put(value);
  file_bytes_written_ += value.size();
  q.command({"SET", Keys::artifact(partition_, key), format_ref(ref), "PX", ttl_ms});
}

void RedisBuildStore::publish(const SharedBuild& build) {
  SharedBuild b = build;
  b.builder = node_;
  const std::string value = pack_artifact(b);
  Pooled q = borrow();
  try {
    if (value.size() > build_.artifact_max_bytes) {
      log::info("build.artifact_too_large", {{"key", b.key}, {"bytes", value.size()}, {"max", build_.artifact_max_bytes}});
    } else {
      store_value(*q, b.key, value);
      ++published_;
    }
  } catch (const kjqueue::QueueError& e) {  // OOM under maxmemory, Redis down: the others build it themselves
    q.broken = true;
    ++publish_failed_;
    log::warn("build.publish_failed", {{"key", b.key}, {"error", e.what()}});
  } catch (const std::exception& e) {  // the file store: disk full, permissions, the mount gone
    ++publish_failed_;
    log::warn("build.publish_failed", {{"key", b.key}, {"error", e.what()}, {"store", "file"}});
  }
  release(b.key);
}

void RedisBuildStore::drop_held(const std::string& key) {
  std::lock_guard lk(mu_);
  if (held_.erase(key) && role_ == Role::Judge) --local_builds_;
}

void RedisBuildStore::release(const std::string& key) {
  std::string tenant;
  {
    std::lock_guard lk(mu_);
    auto it = held_.find(key);
    if (it == held_.end()) return;
    tenant = it->second;
  }
  drop_held(key);
  Pooled q = borrow();
  try {
    q->command({"FCALL", "kj_build_lease", "3", Keys::build_lease(partition_, key), Keys::building(partition_, tenant),
                Keys::caps(partition_), "release", owner_, "1", tenant});
  } catch (const std::exception& e) {  // it expires on its own
    q.broken = true;
    log::warn("build.release_failed", {{"key", key}, {"error", e.what()}});
  }
}

void RedisBuildStore::renew_held() {
  std::map<std::string, std::string> held;
  {
    std::lock_guard lk(mu_);
    held = held_;
  }
  if (held.empty()) return;
  Pooled q = borrow();
  try {
    for (const auto& [key, tenant] : held) {
      const auto r = q->command({"FCALL", "kj_build_lease", "3", Keys::build_lease(partition_, key),
                                 Keys::building(partition_, tenant), Keys::caps(partition_), "renew", owner_,
                                 std::to_string(build_.lease.count()), tenant});
      if (text(r) == "1") continue;
      log::warn("build.lease_lost", {{"key", key}});  // another builder may take it; our artifact still counts
    }
  } catch (const std::exception& e) {
    q.broken = true;
    log::warn("build.lease_renew_failed", {{"error", e.what()}});
  }
}

bool RedisBuildStore::taken(const std::string& key) {
  Pooled q = borrow();
  try {
    const auto n = q->command({"EXISTS", Keys::artifact(partition_, key), Keys::build_lease(partition_, key)});
    return text(n) != "0";
  } catch (const std::exception&) {
    q.broken = true;
    throw;
  }
}

void RedisBuildStore::announce_builder(std::chrono::milliseconds ttl) {
  Pooled q = borrow();
  try {
    const std::int64_t now = wall_ms();
    q->command({"ZADD", Keys::builders(partition_), std::to_string(now + ttl.count()), node_});
    q->command({"ZREMRANGEBYSCORE", Keys::builders(partition_), "-inf", std::to_string(now)});
  } catch (const std::exception& e) {
    q.broken = true;
    log::warn("build.announce_failed", {{"error", e.what()}});
  }
}

void RedisBuildStore::withdraw_builder() {
  Pooled q = borrow();
  try {
    q->command({"ZREM", Keys::builders(partition_), node_});
  } catch (const std::exception&) {
    q.broken = true;
  }
}

std::string RedisBuildStore::render_metrics() const {
  std::string out;
  auto counter = [&](const char* name, const char* help, std::uint64_t v) { append_metric(out, "counter", name, help, v); };
  counter("kjudge_builds_fetched_total", "KernelBench builds taken from the shared store", fetched_);
  counter("kjudge_builds_leased_total", "build leases taken (builds made here for the store)", leased_);
  counter("kjudge_builds_published_total", "artifacts stored", published_);
  counter("kjudge_builds_publish_failed_total", "artifacts Redis refused (memory, connection)", publish_failed_);
  counter("kjudge_builds_rejected_total", "stored artifacts that failed verification (deleted, rebuilt)", rejected_);
  counter("kjudge_builds_file_bytes_read_total", "verified artifact bytes read from the file store", file_bytes_read_);
  counter("kjudge_builds_file_bytes_written_total", "artifact bytes written to the file store", file_bytes_written_);
  counter("kjudge_builds_wait_gave_up_total", "waits for another node's build that reached their bound", gave_up_);
  append_metric(out, "counter", "kjudge_builds_wait_seconds_total", "time jobs waited for the shared store",
                static_cast<double>(wait_ms_.load()) / 1000.0);
  return out;
}

std::size_t RedisBuildStore::leases_held() {
  std::lock_guard lk(mu_);
  return held_.size();
}

}  // namespace kj::buildfarm
