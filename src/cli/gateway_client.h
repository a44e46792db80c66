// `kjudge --redis http://host:port ...`: submit, wait, cancel and batch through kjudge-gateway
// (docs/gateway.md) instead of Redis; the API token comes from $KJUDGE_TOKEN. https:// verifies the
// gateway's certificate against the system's CAs ($SSL_CERT_FILE for a private CA) and its name.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"

namespace kj::cli {

bool is_gateway_url(std::string_view url);

class GatewayClient {
 public:
  struct Response {
    int status = 0;
    std::string body;
  };
  // url: http(s)://host[:port]; throws std::runtime_error on another form or without a token.
  GatewayClient(const std::string& url, std::string token);
  // One request on a fresh connection; resent while the connection fails (up to ~10 s).
  Response request(const std::string& method, const std::string& target, const std::string& body = "") const;

 private:
  Response request_once(const std::string& method, const std::string& target, const std::string& body) const;
  std::string host_, port_, token_;
  bool tls_ = false;
};

// Each returns the process exit code and prints what `kjudge` prints for the same command on Redis.
int gateway_submit(const GatewayClient& gw, const kjudge::v1::Job& job);
// The result, or nullopt when none came within the timeout (or the job is unknown).
std::optional<kjudge::v1::Result> gateway_wait(const GatewayClient& gw, const std::string& job_id,
                                               std::chrono::milliseconds timeout);
int gateway_cancel(const GatewayClient& gw, const std::string& job_id, const std::string& batch_id);
int gateway_batch(const GatewayClient& gw, const std::string& batch_id, bool json);

}  // namespace kj::cli
