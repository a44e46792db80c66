#include "gateway/connection_budget.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <tuple>

namespace kj::gateway {

ConnectionBudget::Clock::duration ConnectionBudget::timeout(const Connection& c, Phase phase) const {
  switch (phase) {
    case Phase::Head: return c.tenant.empty() ? Clock::duration(config_.header_timeout) : Clock::duration(config_.idle_timeout);
    case Phase::Body: return config_.body_timeout;
    case Phase::Writing: return config_.send_timeout;
    case Phase::Handling: break;
  }
  return Clock::duration::max();
}

namespace {

// Bytes the kernel holds for the connection that its thread has not read yet.
int unread_bytes(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

}  // namespace

// The oldest pending connection, passing over those whose head waits unread in the kernel: a
// client that sent its request at once and whose thread has not got to it yet (a loaded machine)
// is not the one to displace. Strangers cannot stay in that state: their threads read what they
// send. Only when every candidate has bytes waiting does the oldest of them go.
int ConnectionBudget::oldest_pending(const std::string* address) const {
  int fd = -1, waiting_fd = -1;
  Clock::time_point since = Clock::time_point::max(), waiting_since = Clock::time_point::max();
  for (const auto& [f, c] : connections_) {
    if (!c.tenant.empty() || c.displaced || (address && c.address != *address)) continue;
    const bool waiting = c.phase == Phase::Head && unread_bytes(f) > 0;
    auto [best, best_since] = waiting ? std::tie(waiting_fd, waiting_since) : std::tie(fd, since);
    if (c.since < best_since) {
      best = f;
      best_since = c.since;
    }
  }
  return fd >= 0 ? fd : waiting_fd;
}

void ConnectionBudget::drop_pending(Connection& c) {
  --pending_;
  if (--pending_by_address_[c.address] == 0) pending_by_address_.erase(c.address);
}

ConnectionBudget::Shutdown ConnectionBudget::admit(int fd, const std::string& address) {
  std::lock_guard lock(mutex_);
  Shutdown out{-1, "", ""};
  const auto it = pending_by_address_.find(address);
  if (it != pending_by_address_.end() && it->second >= config_.max_pending_per_address)
    out = {oldest_pending(&address), "pending_address_displaced", ""};
  else if (pending_ >= config_.max_pending_connections)
    out = {oldest_pending(nullptr), "pending_displaced", ""};
  if (out.fd >= 0) {  // under the lock: its thread cannot have closed the fd (forget() comes first)
    auto& old = connections_.at(out.fd);
    old.displaced = true;
    drop_pending(old);
    ::shutdown(out.fd, SHUT_RDWR);
  }
  const auto now = Clock::now();
  Connection c{Phase::Head, {}, now, address, "", false, false};
  c.deadline = now + timeout(c, Phase::Head);
  connections_[fd] = std::move(c);
  ++pending_;
  ++pending_by_address_[address];
  return out;
}

ConnectionBudget::Promotion ConnectionBudget::promote(int fd, const std::string& tenant) {
  std::lock_guard lock(mutex_);
  auto& c = connections_.at(fd);
  if (c.displaced) return Promotion::Evicted;
  if (!c.tenant.empty()) return Promotion::Ok;  // already a tenant's (the first token's)
  if (authenticated_ >= config_.max_connections) return Promotion::Full;
  auto& mine = by_tenant_[tenant];
  if (mine >= config_.limits_for(tenant).max_connections) return Promotion::TenantFull;
  ++mine;
  ++authenticated_;
  drop_pending(c);
  c.tenant = tenant;
  return Promotion::Ok;
}

bool ConnectionBudget::authenticated(int fd) const {
  std::lock_guard lock(mutex_);
  return !connections_.at(fd).tenant.empty();
}

bool ConnectionBudget::enter(int fd, Phase phase) {
  std::lock_guard lock(mutex_);
  auto& c = connections_.at(fd);
  if (c.displaced || c.reaped || (stopping_ && phase == Phase::Head)) return false;
  c.phase = phase;
  const auto t = timeout(c, phase);
  c.deadline = t == Clock::duration::max() ? Clock::time_point::max() : Clock::now() + t;
  return true;
}

void ConnectionBudget::forget(int fd) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  auto& c = it->second;
  if (c.tenant.empty() && !c.displaced) drop_pending(c);
  if (!c.tenant.empty()) {
    --authenticated_;
    if (--by_tenant_[c.tenant] == 0) by_tenant_.erase(c.tenant);
  }
  connections_.erase(it);
}

std::vector<ConnectionBudget::Shutdown> ConnectionBudget::overdue(Clock::time_point now) {
  static constexpr const char* kReason[] = {"header_timeout", "body_timeout", "", "send_timeout"};
  std::lock_guard lock(mutex_);
  std::vector<Shutdown> out;
  for (auto& [fd, c] : connections_)
    if (!c.reaped && !c.displaced && c.deadline < now) {
      c.reaped = true;
      ::shutdown(fd, SHUT_RDWR);  // its read or write fails, its thread closes it
      out.push_back({fd, kReason[static_cast<int>(c.phase)], c.tenant});
    }
  return out;
}

void ConnectionBudget::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (const auto& [fd, c] : connections_)
    if (c.phase == Phase::Head) ::shutdown(fd, SHUT_RD);  // waiting for a head: its read ends
}

bool ConnectionBudget::empty() const {
  std::lock_guard lock(mutex_);
  return connections_.empty();
}

std::size_t ConnectionBudget::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

}  // namespace kj::gateway
