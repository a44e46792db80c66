#include "gateway/metrics.h"

#include <fmt/format.h>

#include "common/prometheus_text.h"

namespace kj::gateway {
namespace {

void family(std::string& out, std::string_view type, std::string_view name, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

void GatewayMetrics::request(std::string_view route, int status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{std::string(route), status}];
  auto& l = latency_[std::string(route)];
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++l.buckets[i];
  ++l.count;
  l.sum += seconds;
}

void GatewayMetrics::refusal(std::string_view reason, const std::string& tenant) {
  std::lock_guard lock(mutex_);
  ++refusals_[{std::string(reason), tenant}];
}

void GatewayMetrics::accepted(const std::string& tenant, std::size_t jobs) {
  std::lock_guard lock(mutex_);
  accepted_[tenant] += jobs;
}

void GatewayMetrics::redis_error() {
  std::lock_guard lock(mutex_);
  ++redis_errors_;
}

void GatewayMetrics::render_latency(std::string& out) const {
  family(out, "histogram", "kjudge_gateway_request_seconds", "Time from a request's last byte read to its reply, by route.");
  for (const auto& [route, l] : latency_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i)
      out += fmt::format("kjudge_gateway_request_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n", route, kBuckets[i],
                         l.buckets[i]);
    out += fmt::format("kjudge_gateway_request_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n", route, l.count);
    out += fmt::format("kjudge_gateway_request_seconds_sum{{route=\"{}\"}} {}\n", route, l.sum);
    out += fmt::format("kjudge_gateway_request_seconds_count{{route=\"{}\"}} {}\n", route, l.count);
  }
}

std::string GatewayMetrics::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  family(out, "counter", "kjudge_gateway_requests_total", "HTTP requests by route and status code.");
  for (const auto& [key, n] : requests_)
    out += fmt::format("kjudge_gateway_requests_total{{route=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, n);
  render_latency(out);
  family(out, "counter", "kjudge_gateway_refusals_total",
         "Requests refused before Redis, by reason and tenant (tenant empty when not authenticated).");
  for (const auto& [key, n] : refusals_)
    out += fmt::format("kjudge_gateway_refusals_total{{reason=\"{}\",tenant=\"{}\"}} {}\n", key.first, key.second, n);
  family(out, "counter", "kjudge_gateway_jobs_accepted_total", "Jobs written to Redis (duplicates not counted), by tenant.");
  for (const auto& [tenant, n] : accepted_)
    out += fmt::format("kjudge_gateway_jobs_accepted_total{{tenant=\"{}\"}} {}\n", tenant, n);
  append_metric(out, "counter", "kjudge_gateway_redis_errors_total", "Requests that failed on a Redis error (503).",
                redis_errors_);
  append_metric(out, "gauge", "kjudge_gateway_open_connections", "HTTP connections open now.",
                open_connections_.load());
  return out;
}

}  // namespace kj::gateway
