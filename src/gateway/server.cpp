#include "gateway/server.h"

#include <sys/socket.h>

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include "common/log.h"
#include "gateway/routes.h"

namespace kj::gateway {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

using Response = http::response<http::string_body>;

Response to_response(Reply reply, unsigned version, bool keep_alive) {
  Response res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, "kjudge-gateway");
  res.set(http::field::content_type, reply.content_type);
  res.keep_alive(keep_alive);
  res.body() = std::move(reply.body);
  res.prepare_payload();
  return res;
}

// Why a request could not be read to its end, as the reply to send (none: just close).
std::optional<Reply> read_failure(const beast::error_code& ec, std::uint64_t max_bytes) {
  if (ec == http::error::body_limit)
    return error_reply(413, "request_too_large", "requests are limited to " + std::to_string(max_bytes) + " bytes");
  if (ec == http::error::header_limit) return error_reply(431, "headers_too_large", "request headers are too large");
  if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream &&
      ec != http::error::partial_message)
    return error_reply(400, "bad_http", ec.message());
  return std::nullopt;
}

boost::asio::ssl::context tls_context(const GatewayConfig& c) {
  namespace ssl = boost::asio::ssl;
  ssl::context ctx(ssl::context::tls_server);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  ctx.use_certificate_chain_file(c.tls_cert);
  ctx.use_private_key_file(c.tls_key, ssl::context::pem);
  return ctx;
}

}  // namespace

Server::Server(Gateway& gateway) : gateway_(gateway), acceptor_(ioc_) {
  const auto& c = gateway_.config();
  if (!c.tls_cert.empty()) tls_.emplace(tls_context(c));
  tcp::endpoint ep(boost::asio::ip::make_address(c.address), static_cast<unsigned short>(c.port));
  acceptor_.open(ep.protocol());
  acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen(boost::asio::socket_base::max_listen_connections);
}

int Server::port() const { return acceptor_.local_endpoint().port(); }

void Server::run() {
  std::thread reaper([this] { reap_idle(); });
  while (!stopping_) {
    tcp::socket socket(ioc_);
    beast::error_code ec;
    acceptor_.accept(socket, ec);
    if (stopping_) break;
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    std::unique_lock lock(connections_mutex_);
    if (connections_.size() >= gateway_.config().max_connections) {
      lock.unlock();
      refuse_busy(socket);
      continue;
    }
    connections_[socket.native_handle()] = {false, std::chrono::steady_clock::now() + gateway_.config().idle_timeout};
    lock.unlock();
    std::thread([this, s = std::move(socket)]() mutable { serve(std::move(s)); }).detach();
  }
  reaper.join();
}

void Server::reap_idle() {
  std::unique_lock lock(connections_mutex_);
  while (!stopped_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_.load(); })) {
    const auto now = std::chrono::steady_clock::now();
    for (auto& [fd, c] : connections_)
      if (!c.busy && c.deadline < now) {
        ::shutdown(fd, SHUT_RDWR);  // its read fails, its thread closes it
        c.deadline = std::chrono::steady_clock::time_point::max();
      }
  }
}

void Server::refuse_busy(tcp::socket& socket) {
  gateway_.metrics().refusal("too_many_connections", "");
  if (tls_) return;  // no handshake for a connection we will not serve: it is just closed
  beast::error_code ec;
  http::write(socket, to_response(error_reply(503, "too_many_connections", "the gateway is at its connection limit"), 11, false), ec);
}

void Server::serve(tcp::socket socket) {
  gateway_.metrics().connection_opened();
  try {
    if (tls_) {
      boost::asio::ssl::stream<tcp::socket&> stream(socket, *tls_);
      beast::error_code ec;
      stream.handshake(boost::asio::ssl::stream_base::server, ec);
      if (!ec) serve_requests(stream, socket.native_handle());
    } else {
      serve_requests(socket, socket.native_handle());
    }
  } catch (const std::exception& e) {
    log::warn("gateway.connection_failed", {{"error", e.what()}});
  }
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  forget(socket.native_handle());
  gateway_.metrics().connection_closed();
}

template <typename Stream>
void Server::serve_requests(Stream& socket, int fd) {
  Routes routes(gateway_);
  beast::flat_buffer buffer;
  const auto max_bytes = gateway_.config().max_request_bytes;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(max_bytes);
    beast::error_code ec;
    http::read(socket, buffer, parser, ec);
    const bool stay = mark_busy(fd, true);
    if (ec) {
      if (auto reply = read_failure(ec, max_bytes)) {
        gateway_.metrics().refusal(reply->refusal, routes.tenant_of(parser.get()).value_or(""));
        http::write(socket, to_response(std::move(*reply), 11, false), ec);
      }
      return;
    }
    const auto& request = parser.get();
    const bool keep_alive = stay && request.keep_alive();
    http::write(socket, to_response(routes.handle(request), request.version(), keep_alive), ec);
    if (ec || !keep_alive || !mark_busy(fd, false)) return;
  }
}

bool Server::mark_busy(int fd, bool busy) {
  std::lock_guard lock(connections_mutex_);
  auto& c = connections_[fd];
  c.busy = busy;
  if (!busy) c.deadline = std::chrono::steady_clock::now() + gateway_.config().idle_timeout;
  return !stopping_;
}

void Server::forget(int fd) {
  std::lock_guard lock(connections_mutex_);
  connections_.erase(fd);
  if (connections_.empty()) all_closed_.notify_all();
}

void Server::stop() {
  std::lock_guard lock(connections_mutex_);
  stopping_ = true;
  ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes accept()
  for (const auto& [fd, c] : connections_)
    if (!c.busy) ::shutdown(fd, SHUT_RD);  // idle keep-alive: its read ends, the thread closes it
  stopped_.notify_all();
}

bool Server::wait_idle(std::chrono::seconds timeout) {
  std::unique_lock lock(connections_mutex_);
  return all_closed_.wait_for(lock, timeout, [this] { return connections_.empty(); });
}

}  // namespace kj::gateway
