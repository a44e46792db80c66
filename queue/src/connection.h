// One hiredis connection: RAII context and replies, binary-safe argv commands, URL parsing,
// AUTH/SELECT, timeouts, and reconnect-on-next-use after an I/O error.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kTcp;
  std::string path;  // unix socket path
  std::string host;  // tcp host (IPv6 without brackets)
  int port = 6379;
  std::string username;  // redis://user:pass@host/ userinfo (percent-decoded)
  std::string password;
  int db = 0;  // redis://host:port/<db>
};

// "unix:///path/to.sock", "tcp://host[:port]", "redis://[user[:pass]@]host[:port][/db]",
// IPv6 hosts in brackets. Throws QueueError naming the URL on anything else.
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

 private:
  struct ContextFree {
    void operator()(redisContext* c) const noexcept {
      if (c != nullptr) redisFree(c);
    }
  };

  redisContext* context();  // (re)connects when there is no usable context
  void connect();
  void set_timeout(std::chrono::milliseconds timeout);
  [[noreturn]] void fail(const std::string& what);  // drops the context and throws

  Endpoint endpoint_;
  std::string display_url_;
  Address address_;
  std::unique_ptr<redisContext, ContextFree> ctx_;
};

}  // namespace kjqueue::detail
