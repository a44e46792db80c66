#include "gateway/gateway.h"

#include "common/log.h"

namespace kj::gateway {

Gateway::Gateway(GatewayConfig config, kjqueue::Endpoint redis, int partition)
    : config_(std::move(config)), redis_(std::move(redis)), partition_(partition), admission_(config_) {}

Gateway::~Gateway() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

bool Gateway::redis_answered_within(std::chrono::steady_clock::duration age) const {
  const auto last = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(redis_answered_.load()));
  return std::chrono::steady_clock::now() - last <= age;
}

void Gateway::start() {
  kjqueue::Queue q(redis_, partition_);
  tokens_.load(q);
  redis_answered_ = std::chrono::steady_clock::now().time_since_epoch().count();
  refresher_ = std::thread([this] { refresh_loop(); });
}

void Gateway::refresh_queued(kjqueue::Queue& q) {
  const auto notes = admission_.note();
  if (notes.empty()) return;
  std::vector<std::string> argv = {"MGET"};
  for (const auto& n : notes) argv.push_back(kjqueue::Keys::queued(partition_, n.tenant));
  const auto counts = q.command(argv);
  for (std::size_t i = 0; i < notes.size() && i < counts.size(); ++i)
    admission_.set_queued(notes[i], counts[i] ? std::stoll(*counts[i]) : 0);
}

// Wakes at least every second: a PING each time (/readyz), the queued counters and the tokens
// when theirs is due.
void Gateway::refresh_loop() {
  using Clock = std::chrono::steady_clock;
  kjqueue::Queue q(redis_, partition_);
  auto next_tokens = Clock::now() + config_.token_refresh;
  auto next_queued = Clock::now() + config_.queued_refresh;
  const auto tick = std::min<Clock::duration>(std::chrono::seconds(1), config_.queued_refresh);
  std::unique_lock lock(stop_mutex_);
  while (!stop_cv_.wait_for(lock, tick, [this] { return stopping_; })) {
    lock.unlock();
    try {
      q.command({"PING"});  // a frozen Redis holds this call, and readiness ages
      redis_answered_ = Clock::now().time_since_epoch().count();
      if (Clock::now() >= next_queued) {
        refresh_queued(q);
        next_queued = Clock::now() + config_.queued_refresh;
      }
      if (Clock::now() >= next_tokens) {
        tokens_.load(q);
        next_tokens = Clock::now() + config_.token_refresh;
      }
    } catch (const std::exception& e) {  // Redis away: keep the last tables, try again next round
      log::warn("gateway.refresh_failed", {{"error", e.what()}});
    }
    lock.lock();
  }
}

}  // namespace kj::gateway
