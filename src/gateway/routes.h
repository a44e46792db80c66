// The HTTP API of kjudge-gateway (docs/gateway.md). One Routes per connection: it owns that
// connection's Redis connection, opened at its first use.
//   POST   /v1/jobs                  a kjudge.v1.Job                    -> 202 {job_id, entry_id, duplicate}
//   POST   /v1/batches               a kjudge.v1.SubmitBatch           -> 202 {batch_id, jobs: [...]}
//   GET    /v1/jobs/<id>             the kjudge.v1.Result (200), or 202 {state: "pending"}, 404 unknown
//   GET    /v1/jobs/<id>/wait?timeout_s=N   long-poll: as GET, waiting up to N s for the result
//   DELETE /v1/jobs/<id>             cancel                              -> 202, 404 unknown
//   GET    /v1/batches/<id>          counters; DELETE /v1/batches/<id>: cancel the batch (404 unknown)
//   GET    /livez, /readyz           no token (readyz: Redis answered lately)
//   GET    /metrics                  [gateway] metrics_allow addresses, or metrics_token
#pragma once

#include <boost/beast/http.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/body_codec.h"
#include "gateway/gateway.h"
#include "gateway/reply.h"

namespace kj::gateway {

using Request = boost::beast::http::request<boost::beast::http::string_body>;

class Routes {
 public:
  // address: the client's (for /metrics' allow-list)
  Routes(Gateway& gateway, std::string address) : gateway_(gateway), address_(std::move(address)) {}
  // Also counts the request (route, status, latency) and any refusal.
  Reply handle(const Request& request);
  // The tenant a request's token names, if any (for counting refusals of unfinished requests).
  std::optional<std::string> tenant_of(const Request& request) const;

 private:
  Reply dispatch(const Request& request, std::string& route, std::string& tenant);
  Reply tenant_route(const Request& request, const std::string& tenant, std::string_view path, std::string& route);
  Reply submit(const Request& request, const std::string& tenant, bool batch);
  Reply job_route(const Request& request, const std::string& tenant, std::string_view rest_of_path, std::string& route);
  Reply batch_route(const Request& request, const std::string& tenant, std::string_view rest_of_path, std::string& route);
  Reply job_result(const std::string& tenant, const std::string& job_id, BodyFormat format,
                   std::chrono::milliseconds wait);
  Reply batch_counters(const std::string& tenant, const std::string& batch_id);
  Reply cancel(const std::string& tenant, const std::string& job_id, const std::string& batch_id);
  kjqueue::Queue& queue();
  bool may_read_metrics(const Request& request) const;

  Gateway& gateway_;
  std::string address_;
  std::optional<kjqueue::Queue> queue_;
};

}  // namespace kj::gateway
