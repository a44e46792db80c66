// kjudge-gateway's settings: the [gateway] table (and [gateway.tenants.<name>] overrides) of its
// TOML file; [redis] and [daemon] log_level of the same file are read by kj::load_config.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kj::gateway {

// What one tenant may put through the gateway; checked before anything reaches Redis.
struct TenantLimits {
  std::uint64_t max_job_bytes = 1 << 20;  // one serialized Job
  std::uint64_t max_queued = 10'000;      // jobs waiting for a result (Redis memory: at most this x max_job_bytes)
  double rate_per_s = 1'000;              // token bucket: jobs per second ...
  double burst = 2'000;                   // ... and how many may come at once
  std::uint32_t max_batch_jobs = 1'000;   // jobs in one POST /v1/batches
};

struct GatewayConfig {
  std::string address = "127.0.0.1";
  int port = 8480;                                     // 0: any free port (logged at start)
  std::string tls_cert, tls_key;                       // PEM files: both set, the gateway speaks HTTPS only
  std::uint64_t max_request_bytes = 16ull << 20;       // a larger body is refused (413) unread
  unsigned max_connections = 512;                      // one thread each; more are told 503
  std::chrono::seconds idle_timeout{60};               // a keep-alive connection idle this long is closed
  std::chrono::seconds max_wait{120};                  // longest long-poll (GET /v1/jobs/<id>/wait)
  std::chrono::seconds drain_timeout{10};              // SIGTERM: requests in flight get this long
  std::chrono::milliseconds token_refresh{1'000};      // kj:{pN}:tokens re-read this often
  std::chrono::milliseconds queued_refresh{250};       // tenants' queued counters re-read this often
  TenantLimits defaults;
  std::map<std::string, TenantLimits> tenants;

  const TenantLimits& limits_for(const std::string& tenant) const;
};

// Throws std::runtime_error naming the file and key on bad input; no file: the defaults.
GatewayConfig load_gateway_config(const std::optional<std::filesystem::path>& file);

}  // namespace kj::gateway
