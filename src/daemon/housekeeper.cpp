#include "daemon/housekeeper.h"

#include <unistd.h>

#include <random>

#include "buildfarm/file_artifact_store.h"
#include "common/log.h"
#include "common/redis_endpoint.h"

namespace kj {
using namespace std::chrono_literals;
using kjqueue::Keys;

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr auto kArchPrune = 10s;
constexpr auto kArtifactPrune = 10min;

}  // namespace

Housekeeper::Housekeeper(const Config& cfg, std::function<void(std::size_t)> on_trim)
    : cfg_(cfg), on_trim_(std::move(on_trim)) {
  std::random_device rd;
  owner_ = cfg.node + "/" + std::to_string(::getpid()) + "/" + std::to_string(rd());
}

Housekeeper::~Housekeeper() { stop(); }

void Housekeeper::start() { thread_ = std::thread([this] { loop(); }); }

void Housekeeper::stop() {
  {
    std::lock_guard lk(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Housekeeper::hold(kjqueue::Queue& q) {
  const auto r = q.command({"FCALL", "kj_housekeeper", "2", Keys::housekeeper(cfg_.redis.partition),
                            Keys::housekeeper_epoch(cfg_.redis.partition), "hold", owner_,
                            std::to_string(cfg_.queue.housekeeper_lease.count())});
  const std::uint64_t token = r.empty() || !r.front() ? 0 : std::stoull(*r.front());
  if (token != token_) {
    if (token) log::info("housekeeper.elected", {{"owner", owner_}, {"token", token}});
    else log::info("housekeeper.lost", {{"owner", owner_}, {"token", token_.load()}});
    const auto now = Clock::now();
    next_promote_ = next_reap_ = next_archs_ = now;  // a new holder looks at once
    next_trim_ = now + cfg_.queue.trim_interval;
    next_prune_ = now + 1min;
  }
  token_ = token;
  return token != 0;
}

void Housekeeper::loop() {
  std::unique_ptr<kjqueue::Queue> q;
  auto next_hold = Clock::now();
  std::unique_lock lk(mu_);
  while (!stop_) {
    lk.unlock();
    try {
      if (!q) q = std::make_unique<kjqueue::Queue>(redis_endpoint(cfg_.redis), cfg_.redis.partition);
      if (Clock::now() >= next_hold) {
        hold(*q);
        next_hold = Clock::now() + cfg_.queue.housekeeper_lease / 3;
      }
      if (token_) work(*q);
    } catch (const kjqueue::Fenced& e) {  // another node holds it now: stop at once, ask again later
      log::warn("housekeeper.fenced", {{"owner", owner_}, {"error", e.what()}});
      token_ = 0;
    } catch (const std::exception& e) {
      log::warn("housekeeper.failed", {{"error", e.what()}});
      q.reset();
      next_hold = Clock::now() + 1s;
    }
    lk.lock();
    cv_.wait_for(lk, 250ms, [this] { return stop_; });
  }
  lk.unlock();
  if (!token_ || !q) return;
  try {  // a draining node hands the work on now, not after its lease
    q->command({"FCALL", "kj_housekeeper", "2", Keys::housekeeper(cfg_.redis.partition),
                Keys::housekeeper_epoch(cfg_.redis.partition), "release", owner_, "1"});
    log::info("housekeeper.released", {{"owner", owner_}});
  } catch (const std::exception&) {  // it expires
  }
  token_ = 0;
}

void Housekeeper::work(kjqueue::Queue& q) {
  const kjqueue::Fence fence{token_};
  const auto now = Clock::now();
  if (now >= next_promote_) {
    q.promote_due(fence);
    next_promote_ = now + 250ms;
  }
  if (now >= next_trim_) {
    on_trim_(q.trim(fence));
    next_trim_ = now + cfg_.queue.trim_interval;
  }
  if (now >= next_reap_) {
    scan_reapable(q);
    next_reap_ = now + cfg_.queue.reap_interval;
  }
  if (now >= next_archs_) {
    prune_archs(q);
    next_archs_ = now + kArchPrune;
  }
  if (now >= next_prune_ && !cfg_.build.artifact_dir.empty()) {
    next_prune_ = now + kArtifactPrune;
    const auto removed = buildfarm::FileArtifactStore(cfg_.build.artifact_dir).prune(cfg_.build.artifact_file_ttl);
    log::info("housekeeper.artifacts_pruned", {{"removed", removed}, {"dir", cfg_.build.artifact_dir.string()}});
  }
}

// The reaper's scan for every node: which tenants have entries idle past the lease, and "~" (the
// scan's time) so that an empty list still says a housekeeper is at work. The hash lives three scan
// periods: once a housekeeper dies it is gone, and every node's reaper looks at every tenant again
// until the next one is elected (reaping is never slower than without a housekeeper).
void Housekeeper::scan_reapable(kjqueue::Queue& q) {
  const auto idle = q.idle_tenants(cfg_.queue.lease);
  const std::string key = Keys::reapable(cfg_.redis.partition);
  std::vector<std::string> argv = {"HSET", key, "~", std::to_string(wall_ms())};
  for (const auto& t : idle) argv.insert(argv.end(), {t, "1"});
  q.command({"DEL", key});
  q.command(argv);
  q.command({"PEXPIRE", key, std::to_string(std::max<long long>(300, 3 * cfg_.queue.reap_interval.count()))});
  if (!idle.empty()) log::debug("housekeeper.reapable", {{"tenants", idle}});
}

// Judging nodes put "<expiry ms> <arch list>" in kj:{pN}:archs with each heartbeat; a node that is
// gone stops renewing its field, dropped here.
void Housekeeper::prune_archs(kjqueue::Queue& q) {
  const std::string key = Keys::archs(cfg_.redis.partition);
  const auto all = q.command({"HGETALL", key});
  const std::int64_t now = wall_ms();
  std::vector<std::string> argv = {"HDEL", key};
  for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
    const std::string v = all[i + 1].value_or("");
    std::int64_t expiry = 0;
    try {
      expiry = std::stoll(v.substr(0, v.find(' ')));
    } catch (const std::exception&) {
    }
    if (expiry < now && all[i]) argv.push_back(*all[i]);
  }
  if (argv.size() > 2) q.command(argv);
}

}  // namespace kj
