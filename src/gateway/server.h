// kjudge-gateway's HTTP/1.1 listener (Boost.Beast, synchronous): one thread per connection
// (keep-alive; a long-poll holds only its own thread and Redis connection), at most
// max_connections at once (more get 503). A connection must deliver each whole request within
// idle_timeout of the last reply (or of connecting), else the reaper thread shuts it down (idle
// keep-alives and slow senders alike). stop() ends accepting, closes idle connections and
// lets requests in flight finish; wait_idle() waits for them. With [gateway] tls_cert and tls_key,
// every connection is TLS (OpenSSL through Asio).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "gateway/gateway.h"

namespace kj::gateway {

class Server {
 public:
  // Binds now (throws boost::system::system_error when it cannot).
  explicit Server(Gateway& gateway);
  int port() const;
  void run();   // accepts until stop()
  void stop();  // safe from another thread
  bool wait_idle(std::chrono::seconds timeout);  // true when every connection has closed

 private:
  void serve(boost::asio::ip::tcp::socket socket);
  template <typename Stream>
  void serve_requests(Stream& stream, int fd);
  void refuse_busy(boost::asio::ip::tcp::socket& socket);
  // A connection between requests may be shut down by stop(); one in a request may not.
  bool mark_busy(int fd, bool busy);  // false once stopping (the connection then closes)
  void forget(int fd);
  void reap_idle();  // the reaper thread's loop, until stop()

  Gateway& gateway_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  std::atomic<bool> stopping_{false};
  struct Connection {
    bool busy = false;                               // a request is being handled
    std::chrono::steady_clock::time_point deadline;  // not busy: its next request must be in by then
  };
  std::mutex connections_mutex_;
  std::condition_variable all_closed_, stopped_;
  std::map<int, Connection> connections_;  // by fd
};

}  // namespace kj::gateway
