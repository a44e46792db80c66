// What every connection of kjudge-gateway shares: settings, the token table, admission state,
// metrics, and the refresher thread that re-reads tokens and queued counters from Redis.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gateway/config.h"
#include "gateway/limits.h"
#include "gateway/metrics.h"
#include "gateway/tokens.h"
#include "kjqueue/queue.h"

namespace kj::gateway {

class Gateway {
 public:
  Gateway(GatewayConfig config, kjqueue::Endpoint redis, int partition);
  ~Gateway();
  // Reads the tokens once (throws QueueError when Redis cannot be reached), then keeps refreshing.
  void start();

  const GatewayConfig& config() const { return config_; }
  const kjqueue::Endpoint& redis() const { return redis_; }
  int partition() const { return partition_; }
  TokenTable& tokens() { return tokens_; }
  Admission& admission() { return admission_; }
  GatewayMetrics& metrics() { return metrics_; }
  // Whether the refresher had an answer from Redis within `age` (/readyz).
  bool redis_answered_within(std::chrono::steady_clock::duration age) const;

 private:
  void refresh_loop();
  void refresh_queued(kjqueue::Queue& q);

  GatewayConfig config_;
  kjqueue::Endpoint redis_;
  int partition_;
  TokenTable tokens_;
  Admission admission_;
  GatewayMetrics metrics_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread refresher_;
  std::atomic<std::chrono::steady_clock::rep> redis_answered_{0};  // steady_clock ticks of the last answer
};

}  // namespace kj::gateway
