// kjudge-gateway's HTTP/1.1 listener (Boost.Beast, synchronous): one thread per connection
// (keep-alive; a long-poll holds only its own thread and Redis connection). Who may hold a
// connection and for how long is the ConnectionBudget's (gateway/connection_budget.h): pending
// (not yet authenticated) ones have their own smaller budget, every phase but handling has a
// deadline, and a reaper thread shuts down connections past theirs. A stranger's request is
// answered from its head alone (its body is never read) and its connection closed after a 401.
// stop() ends accepting, closes connections waiting for a request and lets requests in flight
// finish; wait_idle() waits for them. With [gateway] tls_cert and tls_key, every connection is
// TLS (OpenSSL through Asio).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "gateway/byte_budget.h"
#include "gateway/connection_budget.h"
#include "gateway/gateway.h"
#include "gateway/reply.h"

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
  void serve(boost::asio::ip::tcp::socket socket, std::string address);
  template <typename Stream>
  void serve_requests(Stream& stream, int fd, const std::string& address);
  template <typename Stream>
  bool write_reply(Stream& stream, int fd, Reply reply, unsigned version, bool keep_alive);
  void reap();  // the reaper thread's loop, until stop()

  Gateway& gateway_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  std::atomic<bool> stopping_{false};
  ConnectionBudget budget_;
  ByteBudget bodies_;
  std::mutex stop_mutex_;
  std::condition_variable all_closed_, stopped_;
};

}  // namespace kj::gateway
