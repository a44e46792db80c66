#include "cli/gateway_client.h"

#include "cli/admin.h"
#include "common/batch_json.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <regex>
#include <thread>

namespace kj::cli {
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr int kExitNoResult = 3;  // as `kjudge wait` on Redis
constexpr int kExitQueueFull = 4;
constexpr std::chrono::seconds kLongPoll{60};

std::string error_of(const GatewayClient::Response& r) {
  const auto j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error")) return j["error"].value("code", "") + ": " + j["error"].value("message", "");
  return r.body;
}

template <typename Stream>
GatewayClient::Response round_trip(Stream& stream, const http::request<http::string_body>& req) {
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  return {static_cast<int>(res.result_int()), res.body()};
}

int fail(const GatewayClient::Response& r) {
  std::cerr << "kjudge: gateway " << r.status << " " << error_of(r) << "\n";
  return r.status == 429 ? kExitQueueFull : 1;
}

}  // namespace

bool is_gateway_url(std::string_view url) { return url.starts_with("http://") || url.starts_with("https://"); }

GatewayClient::GatewayClient(const std::string& url, std::string token) : token_(std::move(token)) {
  std::smatch m;
  if (!std::regex_match(url, m, std::regex(R"((https?)://([^/:]+)(?::([0-9]+))?/?)")))
    throw std::runtime_error("gateway url '" + url + "': want http(s)://host[:port]");
  tls_ = m[1].str() == "https";
  host_ = m[2].str();
  port_ = m[3].matched ? m[3].str() : (tls_ ? "443" : "80");
  if (token_.empty()) throw std::runtime_error("a gateway needs an API token: set KJUDGE_TOKEN (kjudge admin token create)");
}

GatewayClient::Response GatewayClient::request_once(const std::string& method, const std::string& target,
                                                    const std::string& body) const {
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, host_);
  req.set(http::field::authorization, "Bearer " + token_);
  req.set(http::field::accept, "application/x-protobuf");
  if (!body.empty()) req.set(http::field::content_type, "application/x-protobuf");
  req.body() = body;
  req.prepare_payload();
  boost::asio::io_context ioc;
  tcp::socket socket(ioc);
  boost::asio::connect(socket, tcp::resolver(ioc).resolve(host_, port_));
  if (!tls_) return round_trip(socket, req);
  // the system's CAs (OpenSSL honours SSL_CERT_FILE for a private CA), and the certificate must name host_
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<tcp::socket&> stream(socket, ctx);
  SSL_set_tlsext_host_name(stream.native_handle(), host_.c_str());
  stream.set_verify_callback(ssl::host_name_verification(host_));
  stream.handshake(ssl::stream_base::client);
  return round_trip(stream, req);
}

GatewayClient::Response GatewayClient::request(const std::string& method, const std::string& target,
                                               const std::string& body) const {
  for (int attempt = 0;; ++attempt) {
    try {
      return request_once(method, target, body);
    } catch (const boost::system::system_error& e) {  // restarting or unreachable: job ids make a resend safe
      if (e.code().category() == boost::asio::error::get_ssl_category())  // a certificate a resend cannot fix
        throw std::runtime_error("gateway " + host_ + ":" + port_ + ": TLS: " + e.what());
      if (attempt >= 50) throw std::runtime_error("gateway " + host_ + ":" + port_ + ": " + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

int gateway_submit(const GatewayClient& gw, const kjudge::v1::Job& job) {
  const auto r = gw.request("POST", "/v1/jobs", job.SerializeAsString());
  if (r.status != 202) return fail(r);
  std::cout << json::parse(r.body).value("job_id", job.job_id()) << "\n";
  return 0;
}

std::optional<kjudge::v1::Result> gateway_wait(const GatewayClient& gw, const std::string& job_id,
                                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const double seconds = static_cast<double>(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(kLongPoll)).count()) / 1000;
    const auto r = gw.request("GET", "/v1/jobs/" + job_id + "/wait?timeout_s=" + std::to_string(seconds));
    if (r.status == 200) {
      kjudge::v1::Result result;
      if (!result.ParseFromString(r.body)) throw std::runtime_error("the gateway's reply is not a kjudge.v1.Result");
      return result;
    }
    if (r.status != 202) {
      if (r.status != 404) fail(r);
      return std::nullopt;
    }
    if (left.count() <= 0) return std::nullopt;
  }
}

int gateway_cancel(const GatewayClient& gw, const std::string& job_id, const std::string& batch_id) {
  const auto r = batch_id.empty() ? gw.request("DELETE", "/v1/jobs/" + job_id) : gw.request("DELETE", "/v1/batches/" + batch_id);
  if (r.status != 202) return fail(r);
  std::cout << "cancel requested\n";
  return 0;
}

int gateway_batch(const GatewayClient& gw, const std::string& batch_id, bool as_json) {
  const auto r = gw.request("GET", "/v1/batches/" + batch_id);
  if (r.status == 404) {
    std::cerr << "kjudge: batch '" << batch_id << "' not found for this token's tenant\n";
    return kExitNoResult;
  }
  if (r.status != 200) return fail(r);
  const auto j = json::parse(r.body);
  return print_batch_status(j.value("tenant", ""), batch_id, batch_from_json(j), as_json);
}

}  // namespace kj::cli
