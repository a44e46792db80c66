#include "gateway/routes.h"

#include <fmt/format.h>

#include <charconv>

#include "common/batch_json.h"
#include "gateway/submission.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/verdict.pb.h"

namespace kj::gateway {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr auto kCancelTtl = std::chrono::seconds(7 * 24 * 3600);
// /readyz fails once the refresher's last Redis answer is older than this.
constexpr auto kReadyRedisAge = std::chrono::seconds(3);

// Constant-time: a wrong guess takes as long whatever its prefix.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string_view header(const Request& r, http::field f) {
  const auto it = r.find(f);
  return it == r.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
}

// "/v1/jobs/abc/wait?timeout_s=5" -> path "/v1/jobs/abc/wait", query "timeout_s=5"
std::pair<std::string_view, std::string_view> split_target(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

// The seconds of `timeout_s=` in a query string, capped; 30 when absent or not a number.
std::chrono::milliseconds wait_timeout(std::string_view query, std::chrono::seconds max) {
  double seconds = 30;
  for (std::size_t start = 0; start <= query.size();) {
    const auto end = std::min(query.find('&', start), query.size());
    const auto pair = query.substr(start, end - start);
    if (pair.starts_with("timeout_s=")) {
      const auto v = pair.substr(10);
      std::from_chars(v.data(), v.data() + v.size(), seconds);
    }
    start = end + 1;
  }
  seconds = std::clamp(seconds, 0.0, static_cast<double>(max.count()));
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// "/v1/jobs/<id>[/wait]" -> id and the rest ("" or "/wait")
std::pair<std::string, std::string_view> resource_id(std::string_view rest) {
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {std::string(rest), {}};
  return {std::string(rest.substr(0, slash)), rest.substr(slash)};
}

Reply no_route() { return error_reply(404, "not_found", "no such route (docs/gateway.md lists them)"); }

Reply body_refused(std::string_view content_type) {
  return error_reply(415, "unsupported_media_type",
                     fmt::format("Content-Type '{}': send application/json or application/x-protobuf", content_type));
}

}  // namespace

kjqueue::Queue& Routes::queue() {
  if (!queue_) queue_.emplace(gateway_.redis(), gateway_.partition());
  return *queue_;
}

std::optional<std::string> Routes::tenant_of(const Request& request) const {
  return gateway_.tokens().tenant_of(bearer_token(header(request, http::field::authorization)));
}

bool Routes::may_read_metrics(const Request& request) const {
  const auto& c = gateway_.config();
  std::string_view address = address_;
  if (address.starts_with("::ffff:")) address.remove_prefix(7);  // IPv4 on an IPv6 socket
  for (const auto& allowed : c.metrics_allow)
    if (address == allowed) return true;
  return !c.metrics_token.empty() &&
         same_secret(bearer_token(header(request, http::field::authorization)), c.metrics_token);
}

Reply Routes::handle(const Request& request) {
  const auto start = std::chrono::steady_clock::now();
  std::string route = "unknown", tenant;
  Reply reply;
  try {
    reply = dispatch(request, route, tenant);
  } catch (const kjqueue::QueueError& e) {  // Redis away or refusing: nothing was acknowledged
    gateway_.metrics().redis_error();
    reply = error_reply(503, "redis_unavailable", e.what());
  } catch (const std::exception& e) {  // a bug of ours: said, counted, and the connection lives on
    reply = error_reply(500, "internal", e.what());
  }
  if (!reply.refusal.empty()) gateway_.metrics().refusal(reply.refusal, tenant);
  gateway_.metrics().request(route, reply.status,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return reply;
}

Reply Routes::dispatch(const Request& request, std::string& route, std::string& tenant) {
  const auto [path, query] = split_target(std::string_view(request.target().data(), request.target().size()));
  if (path == "/livez") {  // the process answers; nothing else is asked
    route = "livez";
    return {200, "ok\n", "text/plain", {}};
  }
  if (path == "/readyz") {  // from the refresher's last Redis answer: a stranger cannot make Redis work
    route = "readyz";
    if (gateway_.redis_answered_within(kReadyRedisAge)) return {200, "ok\n", "text/plain", {}};
    return {503, "redis has not answered lately\n", "text/plain", {}};
  }
  if (path == "/metrics") {
    route = "metrics";
    if (!may_read_metrics(request))
      return error_reply(403, "metrics_forbidden", "/metrics answers [gateway] metrics_allow addresses or metrics_token");
    return {200, gateway_.metrics().render(), "text/plain; version=0.0.4; charset=utf-8", {}};
  }
  if (!path.starts_with("/v1/")) return no_route();
  const auto who = tenant_of(request);
  if (!who) return error_reply(401, "unauthorized", "send Authorization: Bearer <token> (kjudge admin token create)");
  tenant = *who;
  if (!gateway_.admission().take_request(tenant)) {
    const auto& l = gateway_.config().limits_for(tenant);
    return error_reply(429, "rate_limited",
                       fmt::format("over the tenant's request rate of {}/s (burst {}): retry later",
                                   l.request_rate_per_s, l.request_burst));
  }
  return tenant_route(request, tenant, path.substr(3), route);
}

Reply Routes::tenant_route(const Request& request, const std::string& tenant, std::string_view path, std::string& route) {
  if (request.method() == http::verb::post && (path == "/jobs" || path == "/batches")) {
    route = path == "/jobs" ? "submit" : "submit_batch";
    return submit(request, tenant, path == "/batches");
  }
  if (path.starts_with("/jobs/")) return job_route(request, tenant, path.substr(6), route);
  if (path.starts_with("/batches/")) return batch_route(request, tenant, path.substr(9), route);
  return no_route();
}

Reply Routes::submit(const Request& request, const std::string& tenant, bool batch) {
  const auto media = header(request, http::field::content_type);
  const auto format = body_format(media.empty() ? "application/json" : media);
  if (!format) return body_refused(media);
  Submission submission(gateway_, queue());
  return batch ? submission.submit_batch(tenant, request.body(), *format)
               : submission.submit_job(tenant, request.body(), *format);
}

// GET <id>, GET <id>/wait?timeout_s=N, DELETE <id>
Reply Routes::job_route(const Request& request, const std::string& tenant, std::string_view rest_of_path,
                        std::string& route) {
  const auto [id, rest] = resource_id(rest_of_path);
  if (!kjqueue::valid_job_id(id)) return error_reply(400, "bad_job_id", "job ids match [A-Za-z0-9._:-]{1,128}");
  const auto verb = request.method();
  const auto format = reply_format(header(request, http::field::accept));
  if (verb == http::verb::get && rest.empty()) {
    route = "job";
    return job_result(tenant, id, format, {});
  }
  if (verb == http::verb::get && rest == "/wait") {
    route = "wait";
    const auto query = split_target(std::string_view(request.target().data(), request.target().size())).second;
    return job_result(tenant, id, format, wait_timeout(query, gateway_.config().max_wait));
  }
  if (verb == http::verb::delete_ && rest.empty()) {
    route = "cancel";
    return cancel(tenant, id, "");
  }
  return no_route();
}

// GET <id> (counters), DELETE <id> (cancel the batch)
Reply Routes::batch_route(const Request& request, const std::string& tenant, std::string_view rest_of_path,
                          std::string& route) {
  const auto [id, rest] = resource_id(rest_of_path);
  if (!kjqueue::valid_job_id(id) || !rest.empty())
    return error_reply(400, "bad_batch_id", "batch ids match [A-Za-z0-9._:-]{1,128}");
  if (request.method() == http::verb::get) {
    route = "batch";
    return batch_counters(tenant, id);
  }
  if (request.method() == http::verb::delete_) {
    route = "cancel_batch";
    return cancel(tenant, "", id);
  }
  return no_route();
}

Reply Routes::job_result(const std::string& tenant, const std::string& job_id, BodyFormat format,
                         std::chrono::milliseconds wait) {
  auto& q = queue();
  const auto bytes = wait.count() > 0 ? q.wait_result(tenant, job_id, wait) : q.get_result(tenant, job_id);
  kjudge::v1::Result result;
  if (bytes && result.ParseFromString(*bytes))
    return {200, encode(result, format), std::string(content_type(format)), {}};
  if (bytes) return error_reply(502, "bad_result", "the stored result is not a kjudge.v1.Result");
  const auto marker = q.command({"EXISTS", kjqueue::Keys::job_marker(q.partition(), tenant, job_id)});
  if (marker.empty() || marker[0] != "1") return error_reply(404, "unknown_job", "no job " + job_id + " for this tenant");
  return json_reply(202, {{"job_id", job_id}, {"state", "pending"}});
}

Reply Routes::batch_counters(const std::string& tenant, const std::string& batch_id) {
  const auto b = queue().batch_status(tenant, batch_id);
  if (b.submitted == 0 && b.expected == 0 && !b.cancelled)
    return error_reply(404, "unknown_batch", "no batch " + batch_id + " for this tenant");
  auto j = batch_json(b);
  j["tenant"] = tenant;
  j["batch_id"] = batch_id;
  return json_reply(200, j);
}

// Only what exists is cancelled: an unknown id is 404 and writes nothing, so cancels cannot grow
// Redis (a job submitted after its 404 was not cancelled: the client asked before it existed).
Reply Routes::cancel(const std::string& tenant, const std::string& job_id, const std::string& batch_id) {
  auto& q = queue();
  const int p = q.partition();
  const auto known = batch_id.empty() ? q.command({"EXISTS", kjqueue::Keys::job_marker(p, tenant, job_id),
                                                   kjqueue::Keys::result(p, tenant, job_id)})
                                      : q.command({"EXISTS", kjqueue::Keys::batch(p, tenant, batch_id)});
  if (known.empty() || !known[0] || *known[0] == "0")
    return batch_id.empty() ? error_reply(404, "unknown_job", "no job " + job_id + " for this tenant")
                            : error_reply(404, "unknown_batch", "no batch " + batch_id + " for this tenant");
  if (batch_id.empty()) q.cancel_job(tenant, job_id, kCancelTtl);
  else q.cancel_batch(tenant, batch_id, kCancelTtl);
  return json_reply(202, {{batch_id.empty() ? "job_id" : "batch_id", batch_id.empty() ? job_id : batch_id},
                          {"cancel_requested", true}});
}

}  // namespace kj::gateway
