// kjudged's Prometheus metrics: counters and histograms updated from any thread (atomics and a
// mutex), rendered as the text exposition format for /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kj {

// A fixed-bucket histogram (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double seconds);
  // Appends `name{labels,le=...}` lines.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), last = +Inf
  double sum_ = 0;
  std::uint64_t n_ = 0;
};

// Bucket bounds (seconds) of the waits and judge times: a millisecond to ten minutes.
inline const std::vector<double> kWaitBounds = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600};

struct Metrics {
  Metrics();

  std::atomic<std::uint64_t> deliveries{0};      // entries taken (new and reclaimed)
  std::atomic<std::uint64_t> redeliveries{0};    // entries reclaimed from another (dead) consumer
  std::atomic<std::uint64_t> dead_letters{0};
  std::atomic<std::uint64_t> retries{0};         // INFRA_ERROR parked for a retry
  std::atomic<std::uint64_t> leases_lost{0};
  std::atomic<std::uint64_t> leases_renewed{0};
  std::atomic<std::uint64_t> handed_back{0};
  std::atomic<std::uint64_t> cancelled_running{0};
  std::atomic<std::uint64_t> redis_errors{0};
  std::atomic<std::uint64_t> trimmed{0};
  std::atomic<unsigned> busy{0};
  unsigned slots = 0;

  void count_verdict(const std::string& tenant, const std::string& verdict);
  // Submit to start: into queue_wait (all tenants) and the tenant's own histogram.
  void observe_queue_wait(const std::string& tenant, double seconds);
  Histogram queue_wait{kWaitBounds};
  Histogram judge_seconds{kWaitBounds};
  Histogram complete_seconds{{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 1}};

  // Queue state per tenant, filled in by the scrape (one status() call).
  struct TenantGauge {
    std::uint64_t lag = 0, pending = 0, queued = 0;
  };
  std::string render(const std::map<std::string, TenantGauge>& tenants, bool ready) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> verdicts_;
  std::map<std::string, Histogram> tenant_queue_wait_;  // kjudge_tenant_queue_wait_seconds{tenant}
};

}  // namespace kj
