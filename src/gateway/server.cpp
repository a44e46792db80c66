#include "gateway/server.h"

#include <malloc.h>
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

constexpr std::size_t kTrimAfterBytes = 1 << 20;

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

Server::Server(Gateway& gateway)
    : gateway_(gateway), acceptor_(ioc_), budget_(gateway.config()), bodies_(gateway.config().max_bodies_in_flight_bytes) {
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
  std::thread reaper([this] { reap(); });
  while (!stopping_) {
    tcp::socket socket(ioc_);
    beast::error_code ec;
    acceptor_.accept(socket, ec);
    if (stopping_) break;
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    const auto peer = socket.remote_endpoint(ec);
    if (ec) continue;  // already gone
    auto address = peer.address().to_string();
    // Every newcomer is served; past the pending budget it displaces the oldest pending one.
    const auto displaced = budget_.admit(socket.native_handle(), address);
    if (displaced.fd >= 0) gateway_.metrics().refusal(displaced.reason, "");
    const int fd = socket.native_handle();
    try {
      std::thread([this, s = std::move(socket), a = std::move(address)]() mutable { serve(std::move(s), std::move(a)); })
          .detach();
    } catch (const std::system_error& e) {  // no thread to be had: this one is not served (closed here)
      log::warn("gateway.no_thread", {{"error", e.what()}});
      budget_.forget(fd);
    }
  }
  reaper.join();
}

void Server::reap() {
  std::unique_lock lock(stop_mutex_);
  while (!stopped_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_.load(); }))
    for (const auto& s : budget_.overdue(std::chrono::steady_clock::now()))
      gateway_.metrics().refusal(s.reason, s.tenant);
}

void Server::serve(tcp::socket socket, std::string address) {
  gateway_.metrics().connection_opened();
  try {
    if (tls_) {
      boost::asio::ssl::stream<tcp::socket&> stream(socket, *tls_);
      beast::error_code ec;
      stream.handshake(boost::asio::ssl::stream_base::server, ec);  // within the head's deadline
      if (!ec) serve_requests(stream, socket.native_handle(), address);
    } else {
      serve_requests(socket, socket.native_handle(), address);
    }
  } catch (const std::exception& e) {
    log::warn("gateway.connection_failed", {{"error", e.what()}});
  }
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  budget_.forget(socket.native_handle());  // before the socket closes: the fd is not reused yet
  gateway_.metrics().connection_closed();
  std::lock_guard lock(stop_mutex_);
  all_closed_.notify_all();
}

template <typename Stream>
bool Server::write_reply(Stream& stream, int fd, Reply reply, unsigned version, bool keep_alive) {
  if (!budget_.enter(fd, ConnectionBudget::Phase::Writing)) return false;
  beast::error_code ec;
  http::write(stream, to_response(std::move(reply), version, keep_alive), ec);
  return !ec && keep_alive;
}

// One request after another: its head (the token decides whose connection it is), its body (a
// tenant's only, once the bodies budget has room for it), the reply.
template <typename Stream>
void Server::serve_requests(Stream& stream, int fd, const std::string& address) {
  using Phase = ConnectionBudget::Phase;
  Routes routes(gateway_, address);
  beast::flat_buffer buffer;
  const auto& config = gateway_.config();
  for (;;) {
    if (!budget_.enter(fd, Phase::Head)) return;
    http::request_parser<http::string_body> parser;
    parser.body_limit(config.max_request_bytes);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    // a request that could not be read to its end: its refusal said (if it has one), then closed
    const auto unread = [&](unsigned version) {
      if (auto reply = read_failure(ec, config.max_request_bytes)) {
        gateway_.metrics().refusal(reply->refusal, routes.tenant_of(parser.get()).value_or(""));
        write_reply(stream, fd, std::move(*reply), version, false);
      }
    };
    if (ec) return unread(11);
    const auto version = parser.get().version();
    if (const auto tenant = routes.tenant_of(parser.get())) {
      const auto promoted = budget_.promote(fd, *tenant);
      if (promoted == ConnectionBudget::Promotion::Evicted) return;
      if (promoted != ConnectionBudget::Promotion::Ok) {
        const bool all = promoted == ConnectionBudget::Promotion::Full;
        gateway_.metrics().refusal("too_many_connections", *tenant);
        write_reply(stream, fd,
                    error_reply(503, "too_many_connections",
                                all ? "the gateway is at its connection limit"
                                    : "the tenant is at its connection limit (max_connections_per_tenant)"),
                    version, false);
        return;
      }
    }
    // A stranger's body is never read: the head decides its reply, then the connection closes.
    const bool stranger = !budget_.authenticated(fd);
    bool keep_alive = !parser.is_done() ? !stranger : true;
    std::optional<ByteBudget::Held> held;
    if (!parser.is_done() && !stranger) {
      held = bodies_.acquire(parser.content_length().value_or(config.max_request_bytes),
                             std::chrono::steady_clock::now() + config.body_timeout);
      if (!held) {
        write_reply(stream, fd, error_reply(503, "busy", "the gateway holds its most request bytes: retry"), version,
                    false);
        return;
      }
      if (!budget_.enter(fd, Phase::Body)) return;
      http::read(stream, buffer, parser, ec);
      if (ec) return unread(version);
    }
    if (!budget_.enter(fd, Phase::Handling)) return;
    const auto& request = parser.get();
    Reply reply = routes.handle(request);
    if (held) {
      held.reset();
      // a large body's memory goes back to the system, not to this thread's malloc arena
      if (parser.get().body().size() >= kTrimAfterBytes) ::malloc_trim(0);
    }
    keep_alive = keep_alive && request.keep_alive() && !stopping_ && reply.status != 401;
    if (!write_reply(stream, fd, std::move(reply), request.version(), keep_alive)) return;
  }
}

void Server::stop() {
  std::lock_guard lock(stop_mutex_);
  stopping_ = true;
  ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes accept()
  budget_.stop();
  stopped_.notify_all();
}

bool Server::wait_idle(std::chrono::seconds timeout) {
  std::unique_lock lock(stop_mutex_);
  return all_closed_.wait_for(lock, timeout, [this] { return budget_.empty(); });
}

}  // namespace kj::gateway
