// One hiredis connection: RAII context and replies, binary-safe argv commands, URL parsing,
// AUTH/SELECT, timeouts, and reconnect-on-next-use after an I/O error.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kjqueue/queue.h"

namespace kjqueue::detail {

struct ReplyFree {
  void operator()(redisReply* r) const noexcept {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// A parsed Endpoint::url.
struct Address {
  enum class Kind { kUnix, kTcp, kSentinel };
  Kind kind = Kind::kTcp;
  std::vector<std::pair<std::string, int>> sentinels;  // redis+sentinel:// hosts, in URL order
  std::string master_name;                             // redis+sentinel://.../<master-name>
  std::string path;  // unix socket path
  std::string host;  // tcp host (IPv6 without brackets)
  int port = 6379;
  std::string username;  // redis://user:pass@host/ userinfo (percent-decoded)
  std::string password;
  int db = 0;  // redis://host:port/<db>
};

// "unix:///path/to.sock", "tcp://host[:port]", "redis://[user[:pass]@]host[:port][/db]",
// "redis+sentinel://[user[:pass]@]host[:port][,host[:port]...]/<master-name>[/db]" (sentinel port
// 26379 by default), IPv6 hosts in brackets. Throws QueueError naming the URL on anything else.
Address parse_url(const std::string& url);

// The URL with any password replaced by "***", for messages.
std::string redact_url(const std::string& url);

// Reply accessors; they throw QueueError when the reply has another shape.
bool is_nil(const redisReply* r);
bool is_error(const redisReply* r);
std::string text(const redisReply* r);                      // string, status, error, or integer
std::optional<std::string> opt_text(const redisReply* r);  // nil -> nullopt
long long integer(const redisReply* r);                     // integer, or a string holding one
const redisReply* element(const redisReply* r, std::size_t i);  // array element, bounds-checked
std::size_t size(const redisReply* r);                          // array length (nil -> 0)

class Connection {
 public:
  // Connects now, so a wrong address fails at construction with a readable QueueError.
  explicit Connection(Endpoint endpoint);
  ~Connection();
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and returns its reply. An error reply throws QueueError unless
  // allow_error. `block` is how long the server may legitimately hold the reply (BLOCK
  // arguments); it is added to the command timeout for this call.
  Reply call(const std::vector<std::string>& argv, bool allow_error = false,
             std::chrono::milliseconds block = std::chrono::milliseconds{0});

  // Sends all commands, then reads all replies (one round trip). Error replies are returned.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);

  const std::string& url() const { return display_url_; }  // password redacted

  // WAIT for replica_acks() replicas to hold every write this connection made; Unavailable when
  // fewer did within the endpoint's replica_ack_timeout. No-op when replica_acks() is 0.
  void wait_replicas();
  int replica_acks() const { return replica_acks_; }
  std::chrono::milliseconds failover_wait() const { return failover_wait_; }

 private:
  struct ContextFree {
    void operator()(redisContext* c) const noexcept {
      if (c != nullptr) redisFree(c);
    }
  };

  redisContext* context();  // (re)connects when there is no usable context
  void connect();
  void connect_to(const std::string& host, int port);  // a TCP or unix context, AUTH, SELECT
  void connect_via_sentinels();                       // the primary the sentinels name, ROLE-checked
  void set_timeout(std::chrono::milliseconds timeout);
  [[noreturn]] void fail(const std::string& what);  // drops the context and throws

  Endpoint endpoint_;
  std::string display_url_;
  Address address_;
  int replica_acks_ = 0;
  std::chrono::milliseconds failover_wait_{0};
  std::unique_ptr<redisContext, ContextFree> ctx_;
};

}  // namespace kjqueue::detail
