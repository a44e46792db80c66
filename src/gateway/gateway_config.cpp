#include "gateway/gateway_config.h"

#include <toml++/toml.h>

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
}

void apply(const toml::table& g, GatewayConfig& c) {
  const std::string s = "gateway";
  if (auto a = exact<std::string>(g, s, "address")) c.address = *a;
  take_int(g, s, "port", c.port, 0, 65535);
  if (auto v = exact<std::string>(g, s, "tls_cert")) c.tls_cert = *v;
  if (auto v = exact<std::string>(g, s, "tls_key")) c.tls_key = *v;
  if (c.tls_cert.empty() != c.tls_key.empty()) throw std::runtime_error("gateway.tls_cert and gateway.tls_key go together");
  take_int(g, s, "max_request_bytes", c.max_request_bytes, 1024, 1ll << 31);
  take_int(g, s, "max_connections", c.max_connections, 1, 100'000);
  take_duration(g, s, "idle_timeout_s", c.idle_timeout, 1);
  take_duration(g, s, "max_wait_s", c.max_wait, 1);
  take_duration(g, s, "drain_timeout_s", c.drain_timeout, 0);
  take_duration(g, s, "token_refresh_ms", c.token_refresh, 10);
  take_duration(g, s, "queued_refresh_ms", c.queued_refresh, 10);
  apply_limits(g, s, c.defaults);
  const auto* tenants = g["tenants"].as_table();
  if (!tenants) return;
  for (const auto& [name, node] : *tenants) {
    const auto* t = node.as_table();
    const std::string section = "gateway.tenants." + std::string(name.str());
    if (!t) throw std::runtime_error(section + " must be a table");
    TenantLimits limits = c.defaults;
    apply_limits(*t, section, limits);
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
  if (!file) return c;
  try {
    const toml::table root = toml::parse_file(file->string());
    if (const auto* g = root["gateway"].as_table()) apply(*g, c);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(file->string() + ": " + std::string(e.description()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file->string() + ": " + e.what());
  }
  return c;
}

}  // namespace kj::gateway
