#include "http/server.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>

namespace kj {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, HttpServer::Handler& h) : stream_(std::move(s)), handler_(h) {}
  void start() {
    stream_.expires_after(std::chrono::seconds(5));
    http::async_read(stream_, buf_, req_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->respond();
    });
  }

 private:
  void respond() {
    HttpReply r;
    if (req_.method() != http::verb::get && req_.method() != http::verb::head) {
      r = {405, "GET only\n", "text/plain"};
    } else {
      r = handler_(std::string(req_.target()));
    }
    res_.result(static_cast<http::status>(r.status));
    res_.version(req_.version());
    res_.keep_alive(false);
    res_.set(http::field::content_type, r.content_type);
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    });
  }

  beast::tcp_stream stream_;
  HttpServer::Handler& handler_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
};

}  // namespace

HttpServer::HttpServer(boost::asio::io_context& ioc, const std::string& address, int port, Handler handler)
    : acceptor_(ioc), handler_(std::move(handler)) {
  tcp::endpoint ep(boost::asio::ip::make_address(address), static_cast<unsigned short>(port));
  acceptor_.open(ep.protocol());
  acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  accept();
}

int HttpServer::port() const { return acceptor_.local_endpoint().port(); }

void HttpServer::close() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void HttpServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(s), handler_)->start();
    accept();
  });
}

}  // namespace kj
