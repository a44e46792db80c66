#include "gateway/config.h"

#include <gtest/gtest.h>

#include <fstream>

namespace kj::gateway {
namespace {

std::filesystem::path write_config(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("kjgw-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << text;
  return path;
}

TEST(GatewayConfig, TenantsInheritTheGatewayDefaults) {
  const auto path = write_config(R"(
[redis]
url = "tcp://127.0.0.1:1"
[gateway]
port = 0
max_job_bytes = 2048
rate_per_s = 50
[gateway.tenants.team-a]
max_queued = 7
)");
  const auto c = load_gateway_config(path);
  std::filesystem::remove(path);
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.limits_for("team-a").max_queued, 7u);
  EXPECT_EQ(c.limits_for("team-a").max_job_bytes, 2048u);
  EXPECT_EQ(c.limits_for("team-a").rate_per_s, 50);
  EXPECT_EQ(c.limits_for("other").max_queued, TenantLimits{}.max_queued);
}

TEST(GatewayConfig, ConnectionBudgetsAndTheRequestBucket) {
  const auto path = write_config(R"(
[gateway]
max_pending_connections = 8
header_timeout_ms = 500
metrics_allow = ["10.0.0.5"]
metrics_token = "m"
rate_per_s = 50
[gateway.tenants.team-a]
rate_per_s = 7
[gateway.tenants.team-c]
rate_per_s = 5000
[gateway.tenants.team-b]
request_rate_per_s = 3
max_connections_per_tenant = 2
)");
  const auto c = load_gateway_config(path);
  std::filesystem::remove(path);
  EXPECT_EQ(c.max_pending_connections, 8u);
  EXPECT_EQ(c.header_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(c.metrics_allow, std::vector<std::string>{"10.0.0.5"});
  EXPECT_EQ(c.metrics_token, "m");
  // unset, a tenant's request bucket follows its own job bucket
  EXPECT_EQ(c.limits_for("other").request_rate_per_s, 1000);  // at least 1000/s
  EXPECT_EQ(c.limits_for("team-a").request_rate_per_s, 1000);
  EXPECT_EQ(c.limits_for("team-c").request_rate_per_s, 5000);
  EXPECT_EQ(c.limits_for("team-b").request_rate_per_s, 3);
  EXPECT_EQ(c.limits_for("team-b").max_connections, 2u);
  EXPECT_EQ(load_gateway_config(std::nullopt).defaults.request_burst, TenantLimits{}.burst);
}

TEST(GatewayConfig, WrongTypesAndRangesNameTheKey) {
  for (const char* bad : {"[gateway]\nport = \"80\"\n", "[gateway]\nport = 70000\n", "[gateway]\nburst = -1\n",
                          "[gateway.tenants]\nx = 1\n",
                          "[gateway]\nmetrics_allow = \"127.0.0.1\"\n", "[gateway]\nheader_timeout_ms = 1\n"}) {
    const auto path = write_config(bad);
    EXPECT_THROW(load_gateway_config(path), std::runtime_error) << bad;
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace kj::gateway
