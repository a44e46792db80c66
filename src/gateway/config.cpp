#include "gateway/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <stdexcept>

namespace kj::gateway {
namespace {

template <typename T>
std::optional<T> exact(const toml::table& t, const std::string& section, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value_exact<T>()) return *v;
  if constexpr (std::is_same_v<T, double>)
    if (auto v = n->value_exact<std::int64_t>()) return static_cast<double>(*v);
  throw std::runtime_error(section + "." + std::string(key) + " has the wrong type");
}

template <typename Int>
void take_int(const toml::table& t, const std::string& section, std::string_view key, Int& out, std::int64_t min,
              std::int64_t max) {
  const auto v = exact<std::int64_t>(t, section, key);
  if (!v) return;
  if (*v < min || *v > max)
    throw std::runtime_error(section + "." + std::string(key) + " must be in " + std::to_string(min) + ".." +
                             std::to_string(max));
  out = static_cast<Int>(*v);
}

template <typename Duration>
void take_duration(const toml::table& t, const std::string& section, std::string_view key, Duration& out,
                   std::int64_t min) {
  auto count = static_cast<std::int64_t>(out.count());
  take_int(t, section, key, count, min, 86'400'000);
  out = Duration(count);
}

void take_positive(const toml::table& t, const std::string& section, std::string_view key, double& out) {
  const auto v = exact<double>(t, section, key);
  if (!v) return;
  if (!(*v > 0)) throw std::runtime_error(section + "." + std::string(key) + " must be positive");
  out = *v;
}

void apply_limits(const toml::table& t, const std::string& section, TenantLimits& l) {
  take_int(t, section, "max_job_bytes", l.max_job_bytes, 1, 1ll << 30);
  take_int(t, section, "max_queued", l.max_queued, 0, 1ll << 32);
  take_positive(t, section, "rate_per_s", l.rate_per_s);
  take_positive(t, section, "burst", l.burst);
  take_int(t, section, "max_batch_jobs", l.max_batch_jobs, 1, 100'000);
  take_positive(t, section, "request_rate_per_s", l.request_rate_per_s);
  take_positive(t, section, "request_burst", l.request_burst);
  take_int(t, section, "max_connections_per_tenant", l.max_connections, 1, 100'000);
}

// A request bucket left unset follows the job bucket (each tenant's own, after its overrides),
// but no lower than 1000/s and 2000: a tenant with a slow job rate still reads its results.
void resolve_request_rate(TenantLimits& l) {
  if (l.request_rate_per_s <= 0) l.request_rate_per_s = std::max(l.rate_per_s, kMinRequestRate);
  if (l.request_burst <= 0) l.request_burst = std::max(l.burst, kMinRequestBurst);
}

std::vector<std::string> string_list(const toml::table& t, const std::string& section, std::string_view key,
                                     std::vector<std::string> fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  const auto* a = n->as_array();
  if (!a) throw std::runtime_error(section + "." + std::string(key) + " must be a list of strings");
  std::vector<std::string> out;
  for (const auto& e : *a) {
    const auto v = e.value_exact<std::string>();
    if (!v) throw std::runtime_error(section + "." + std::string(key) + " must be a list of strings");
    out.push_back(*v);
  }
  return out;
}

void apply_connections(const toml::table& g, const std::string& s, GatewayConfig& c) {
  take_int(g, s, "max_connections", c.max_connections, 1, 100'000);
  take_int(g, s, "max_pending_connections", c.max_pending_connections, 1, 100'000);
  take_int(g, s, "max_pending_per_address", c.max_pending_per_address, 1, 100'000);
  take_duration(g, s, "header_timeout_ms", c.header_timeout, 10);
  take_duration(g, s, "body_timeout_ms", c.body_timeout, 10);
  take_duration(g, s, "send_timeout_ms", c.send_timeout, 10);
  take_duration(g, s, "idle_timeout_s", c.idle_timeout, 1);
  take_int(g, s, "max_bodies_in_flight_bytes", c.max_bodies_in_flight_bytes, 1 << 20, 1ll << 40);
  take_int(g, s, "max_body_depth", c.max_body_depth, 4, 1000);
  take_int(g, s, "max_body_elements", c.max_body_elements, 100, 1ll << 32);
  c.metrics_allow = string_list(g, s, "metrics_allow", c.metrics_allow);
  if (auto v = exact<std::string>(g, s, "metrics_token")) c.metrics_token = *v;
}

void apply(const toml::table& g, GatewayConfig& c) {
  const std::string s = "gateway";
  if (auto a = exact<std::string>(g, s, "address")) c.address = *a;
  take_int(g, s, "port", c.port, 0, 65535);
  if (auto v = exact<std::string>(g, s, "tls_cert")) c.tls_cert = *v;
  if (auto v = exact<std::string>(g, s, "tls_key")) c.tls_key = *v;
  if (c.tls_cert.empty() != c.tls_key.empty()) throw std::runtime_error("gateway.tls_cert and gateway.tls_key go together");
  take_int(g, s, "max_request_bytes", c.max_request_bytes, 1024, 1ll << 31);
  apply_connections(g, s, c);
  take_duration(g, s, "max_wait_s", c.max_wait, 1);
  take_duration(g, s, "drain_timeout_s", c.drain_timeout, 0);
  take_duration(g, s, "token_refresh_ms", c.token_refresh, 10);
  take_duration(g, s, "queued_refresh_ms", c.queued_refresh, 10);
  apply_limits(g, s, c.defaults);
  const TenantLimits as_set = c.defaults;  // before the request bucket follows the job bucket
  resolve_request_rate(c.defaults);
  const auto* tenants = g["tenants"].as_table();
  if (!tenants) return;
  for (const auto& [name, node] : *tenants) {
    const auto* t = node.as_table();
    const std::string section = "gateway.tenants." + std::string(name.str());
    if (!t) throw std::runtime_error(section + " must be a table");
    TenantLimits limits = as_set;
    apply_limits(*t, section, limits);
    resolve_request_rate(limits);
    c.tenants[std::string(name.str())] = limits;
  }
}

}  // namespace

const TenantLimits& GatewayConfig::limits_for(const std::string& tenant) const {
  const auto it = tenants.find(tenant);
  return it == tenants.end() ? defaults : it->second;
}

GatewayConfig load_gateway_config(const std::optional<std::filesystem::path>& file) {
  GatewayConfig c;
  if (!file) {
    resolve_request_rate(c.defaults);
    return c;
  }
  try {
    const toml::table root = toml::parse_file(file->string());
    if (const auto* g = root["gateway"].as_table()) apply(*g, c);
    else resolve_request_rate(c.defaults);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(file->string() + ": " + std::string(e.description()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file->string() + ": " + e.what());
  }
  return c;
}

}  // namespace kj::gateway
