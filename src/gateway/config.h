// kjudge-gateway's settings: the [gateway] table (and [gateway.tenants.<name>] overrides) of its
// TOML file; [redis] and [daemon] log_level of the same file are read by kj::load_config.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kj::gateway {

// What one tenant may put through the gateway; checked before anything reaches Redis.
// The least an unset request bucket gets (gateway/config.cpp, resolve_request_rate).
inline constexpr double kMinRequestRate = 1'000, kMinRequestBurst = 2'000;

struct TenantLimits {
  std::uint64_t max_job_bytes = 1 << 20;  // one serialized Job
  std::uint64_t max_queued = 10'000;      // jobs waiting for a result (Redis memory: at most this x max_job_bytes)
  double rate_per_s = 1'000;              // token bucket: jobs per second ...
  double burst = 2'000;                   // ... and how many may come at once
  std::uint32_t max_batch_jobs = 1'000;   // jobs in one POST /v1/batches
  // Every request of the tenant (reads, waits, cancels, submits) takes one from a bucket of its own;
  // unset, it follows rate_per_s / burst, at least kMinRequestRate / kMinRequestBurst.
  double request_rate_per_s = 0, request_burst = 0;
  unsigned max_connections = 128;  // authenticated connections of this tenant at once
};

struct GatewayConfig {
  std::string address = "127.0.0.1";
  int port = 8480;                                     // 0: any free port (logged at start)
  std::string tls_cert, tls_key;                       // PEM files: both set, the gateway speaks HTTPS only
  std::uint64_t max_request_bytes = 16ull << 20;       // a larger body is refused (413) unread
  // Connections (docs/security-model.md, *The gateway*): one thread each. A connection is pending
  // until a request of it carries a valid token; pending ones have a budget of their own, and a
  // newcomer past it (or past its address's share) takes the place of the oldest pending one, so
  // strangers never hold what authenticated tenants use.
  unsigned max_connections = 512;                      // authenticated ones; past it (or the tenant's cap): 503
  unsigned max_pending_connections = 64;               // not yet authenticated
  unsigned max_pending_per_address = 16;               // of those, from one client address
  std::chrono::milliseconds header_timeout{10'000};    // a pending connection's request head must be in by then
  std::chrono::milliseconds body_timeout{30'000};      // a body must be in this long after its head
  std::chrono::milliseconds send_timeout{10'000};      // a reply must be written (read by the client) by then
  std::chrono::seconds idle_timeout{60};               // an authenticated keep-alive's next head, after a reply
  std::uint64_t max_bodies_in_flight_bytes = 32ull << 20;  // bodies held at once (Content-Length); more wait
  // Decoding (gateway/body_check.h): checked before protobuf allocates anything.
  unsigned max_body_depth = 32;                        // nested objects / arrays / messages
  std::uint64_t max_body_elements = 250'000;           // values in one body (fields, list items)
  // /metrics names tenants: it answers only these addresses, or a request with this bearer token.
  std::vector<std::string> metrics_allow = {"127.0.0.1", "::1"};
  std::string metrics_token;
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
