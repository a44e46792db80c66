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

void Gateway::start() {
  kjqueue::Queue q(redis_, partition_);
  tokens_.load(q);
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

void Gateway::refresh_loop() {
  kjqueue::Queue q(redis_, partition_);
  auto next_tokens = std::chrono::steady_clock::now() + config_.token_refresh;
  std::unique_lock lock(stop_mutex_);
  while (!stop_cv_.wait_for(lock, config_.queued_refresh, [this] { return stopping_; })) {
    lock.unlock();
    try {
      refresh_queued(q);
      if (std::chrono::steady_clock::now() >= next_tokens) {
        tokens_.load(q);
        next_tokens = std::chrono::steady_clock::now() + config_.token_refresh;
      }
    } catch (const std::exception& e) {  // Redis away: keep the last tables, try again next round
      log::warn("gateway.refresh_failed", {{"error", e.what()}});
    }
    lock.lock();
  }
}

}  // namespace kj::gateway
