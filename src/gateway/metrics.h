// The gateway's /metrics (Prometheus text): requests by route and status code, their latency
// (histogram per route), refusals by reason and tenant, jobs accepted per tenant, open connections.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace kj::gateway {

class GatewayMetrics {
 public:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,  1,     5,     30};
  void request(std::string_view route, int status, double seconds);
  void refusal(std::string_view reason, const std::string& tenant);
  void accepted(const std::string& tenant, std::size_t jobs);
  void redis_error();
  void connection_opened() { ++open_connections_; }
  void connection_closed() { --open_connections_; }
  std::string render() const;

 private:
  struct Latency {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  void render_latency(std::string& out) const;  // mutex_ held

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;         // (route, status)
  std::map<std::string, Latency> latency_;                                // route
  std::map<std::pair<std::string, std::string>, std::uint64_t> refusals_; // (reason, tenant)
  std::map<std::string, std::uint64_t> accepted_;                         // tenant
  std::uint64_t redis_errors_ = 0;
  std::atomic<long> open_connections_{0};
};

}  // namespace kj::gateway
