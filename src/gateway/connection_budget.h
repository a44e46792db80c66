// Who may hold a connection of kjudge-gateway, and for how long (docs/security-model.md, *The
// gateway*). Every connection is pending until a request of it carries a valid token; then it is
// its tenant's. Pending connections have a budget of their own (and a share per client address):
// a newcomer past it takes the place of the oldest pending one, so strangers cycle among
// themselves and never hold a place an authenticated tenant uses. Authenticated ones have a cap
// in all and per tenant (past it: 503). Each phase of a connection has a deadline: its request
// head, its body, the write of its reply; the reaper shuts down a connection past its deadline
// (a slow sender, or a reader that does not read), as nginx's client_header_timeout,
// client_body_timeout and send_timeout do. Only handling (a long-poll too) has none.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/config.h"

namespace kj::gateway {

class ConnectionBudget {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Phase { Head, Body, Handling, Writing };
  enum class Promotion { Ok, Evicted, Full, TenantFull };
  // A connection the budget shut down (under its lock, so the fd is still that connection's) and
  // why (a refusal reason for the metrics).
  struct Shutdown {
    int fd;
    const char* reason;
    std::string tenant;
  };

  explicit ConnectionBudget(const GatewayConfig& config) : config_(config) {}
  // A new connection (pending, reading its head): the pending one it displaces, if any (fd -1: none).
  Shutdown admit(int fd, const std::string& address);
  // The connection's first request with a valid token: it becomes the tenant's.
  Promotion promote(int fd, const std::string& tenant);
  bool authenticated(int fd) const;
  // Enters a phase; false when the connection must close (stopping, or displaced).
  bool enter(int fd, Phase phase);
  void forget(int fd);
  // Connections past their phase's deadline, each marked so it is reported once.
  std::vector<Shutdown> overdue(Clock::time_point now);
  // Stopping: no more requests; those waiting for a head are shut down for reading.
  void stop();
  bool empty() const;
  std::size_t pending() const;

 private:
  struct Connection {
    Phase phase = Phase::Head;
    Clock::time_point deadline, since;
    std::string address, tenant;  // tenant empty: pending
    bool displaced = false, reaped = false;
  };
  void drop_pending(Connection& c);  // mutex_ held
  int oldest_pending(const std::string* address) const;
  Clock::duration timeout(const Connection& c, Phase phase) const;

  const GatewayConfig& config_;
  mutable std::mutex mutex_;
  bool stopping_ = false;
  std::map<int, Connection> connections_;  // by fd
  std::size_t pending_ = 0, authenticated_ = 0;
  std::map<std::string, unsigned> pending_by_address_, by_tenant_;
};

}  // namespace kj::gateway
