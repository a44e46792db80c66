// A tiny HTTP/1.1 server on the daemon's event loop (Boost.Beast): GET only, one request per
// connection, for /metrics, /livez and /readyz. Binds loopback by default (config [metrics]).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

namespace kj {

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(const std::string& target)>;
  // Throws boost::system::system_error when the address cannot be bound.
  HttpServer(boost::asio::io_context& ioc, const std::string& address, int port, Handler handler);
  void close();
  int port() const;  // the bound port (for port 0)

 private:
  void accept();
  boost::asio::ip::tcp::acceptor acceptor_;
  Handler handler_;
};

}  // namespace kj
