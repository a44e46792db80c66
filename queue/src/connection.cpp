#include "connection.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <strings.h>
#include <thread>
#include <tuple>
#include <utility>

#include <pthread.h>
#include <signal.h>
#include <sys/un.h>

namespace kjqueue::detail {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  if (ms.count() < 1) ms = std::chrono::milliseconds{1};
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
  return tv;
}

[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  throw QueueError("redis url '" + redact_url(url) + "': " + why);
}

int parse_int(const std::string& url, std::string_view s, const char* what, int lo, int hi) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) {
    bad_url(url, std::string("bad ") + what + " '" + std::string(s) + "'");
  }
  return v;
}

std::string percent_decode(const std::string& url, std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) bad_url(url, "truncated %-escape");
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc{} || p != s.data() + i + 3) bad_url(url, "bad %-escape");
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

const char* type_name(int type) {
  switch (type) {
    case REDIS_REPLY_STRING: return "string";
    case REDIS_REPLY_ARRAY: return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "status";
    case REDIS_REPLY_ERROR: return "error";
    default: return "unknown";
  }
}

[[noreturn]] void shape(const redisReply* r, const char* wanted) {
  throw QueueError(std::string("redis: expected a ") + wanted + " reply, got " +
                   (r == nullptr ? "nothing" : type_name(r->type)));
}

// For error messages: the command name and, for short commands, the arguments (payloads are
// binary and may be large, so only printable short arguments are shown).
std::string describe(const std::vector<std::string>& argv) {
  if (!argv.empty() && strcasecmp(argv[0].c_str(), "AUTH") == 0) return "AUTH <redacted>";
  std::string out;
  for (std::size_t i = 0; i < argv.size() && i < 6; ++i) {
    const std::string& a = argv[i];
    bool printable = a.size() <= 64;
    for (char c : a) printable = printable && c >= 0x20 && c < 0x7f;
    if (!out.empty()) out += ' ';
    out += printable ? a : "<" + std::to_string(a.size()) + " bytes>";
  }
  if (argv.size() > 6) out += " ...";
  return out;
}

// A write to a socket whose server died raises SIGPIPE, which kills the process unless someone
// ignores it; a library must not change the process's signal dispositions. So, per call: block
// SIGPIPE in this thread, and swallow one that our write raised before unblocking.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        const timespec zero{0, 0};
        while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_pending_ = false;
};

// Replies that say this server is not (or not yet, or no longer safely) the primary: the
// connection is dropped so the next call finds the primary again.
bool lost_primary(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ERROR) return false;
  const std::string_view e(r->str, r->len);
  for (std::string_view p : {"READONLY", "MASTERDOWN", "LOADING", "NOREPLICAS"})
    if (e.substr(0, p.size()) == p) return true;
  return false;
}

}  // namespace

std::string redact_url(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos) return url;
  const auto start = sep + 3;
  const auto end = url.find('/', start);
  const auto at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < start) return url;
  const auto colon = url.find(':', start);
  if (colon != std::string::npos && colon < at) return url.substr(0, colon + 1) + "***" + url.substr(at);
  return url.substr(0, start) + "***" + url.substr(at);
}

namespace {

// host[:port] or [v6]:port
std::pair<std::string, int> parse_host_port(const std::string& url, std::string_view rest, int default_port) {
  std::string host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    auto close = rest.find(']');
    if (close == std::string_view::npos) bad_url(url, "unterminated [ipv6] host");
    host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') bad_url(url, "garbage after [ipv6] host");
      port = after.substr(1);
    }
  } else if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = std::string(rest.substr(0, colon));
    port = rest.substr(colon + 1);
  } else {
    host = std::string(rest);
  }
  if (host.empty()) bad_url(url, "no host");
  return {host, port.empty() ? default_port : parse_int(url, port, "port", 1, 65535)};
}

void parse_userinfo(const std::string& url, std::string_view userinfo, Address& a) {
  if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
    a.username = percent_decode(url, userinfo.substr(0, colon));
    a.password = percent_decode(url, userinfo.substr(colon + 1));
  } else {
    a.password = percent_decode(url, userinfo);  // redis://secret@host: password only
  }
}

// [userinfo@]host[:port][,host[:port]...]/<master-name>[/db]
Address parse_sentinel_url(const std::string& url, std::string_view rest) {
  Address a;
  a.kind = Address::Kind::kSentinel;
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) bad_url(url, "redis+sentinel:// needs /<master-name> after the sentinels");
  std::string_view path = rest.substr(slash + 1);
  rest = rest.substr(0, slash);
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    parse_userinfo(url, rest.substr(0, at), a);
    rest = rest.substr(at + 1);
  }
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    a.sentinels.push_back(parse_host_port(url, rest.substr(0, comma), 26379));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (a.sentinels.empty()) bad_url(url, "no sentinel");
  const auto db_slash = path.find('/');
  a.master_name = std::string(path.substr(0, db_slash));
  if (a.master_name.empty()) bad_url(url, "no master name");
  if (db_slash != std::string_view::npos) a.db = parse_int(url, path.substr(db_slash + 1), "database number", 0, 1 << 20);
  return a;
}

}  // namespace

Address parse_url(const std::string& url) {
  Address a;
  const auto sep = url.find("://");
  if (sep == std::string::npos) bad_url(url, "expected unix://, tcp://, redis:// or redis+sentinel://");
  const std::string scheme = url.substr(0, sep);
  std::string_view rest = std::string_view(url).substr(sep + 3);

  if (scheme == "unix") {
    a.kind = Address::Kind::kUnix;
    if (rest.empty() || rest.front() != '/') bad_url(url, "unix:// needs an absolute socket path");
    a.path = std::string(rest);
    if (a.path.size() >= sizeof(sockaddr_un{}.sun_path)) bad_url(url, "socket path too long");
    return a;
  }
  if (scheme == "redis+sentinel") return parse_sentinel_url(url, rest);
  if (scheme != "tcp" && scheme != "redis") {
    bad_url(url, "unsupported scheme '" + scheme + "' (use unix://, tcp://, redis:// or redis+sentinel://)");
  }
  a.kind = Address::Kind::kTcp;

  // [userinfo@]host[:port][/db]
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    if (scheme != "redis") bad_url(url, "credentials are only accepted in redis:// urls");
    parse_userinfo(url, rest.substr(0, at), a);
    rest = rest.substr(at + 1);
  }
  std::tie(a.host, a.port) = parse_host_port(url, rest, 6379);
  if (!path.empty()) {
    if (scheme != "redis") bad_url(url, "a database number is only accepted in redis:// urls");
    a.db = parse_int(url, path, "database number", 0, 1 << 20);
  }
  return a;
}

bool is_nil(const redisReply* r) { return r == nullptr || r->type == REDIS_REPLY_NIL; }
bool is_error(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_ERROR; }

std::string text(const redisReply* r) {
  if (r == nullptr) shape(r, "string");
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    default: shape(r, "string");
  }
}

std::optional<std::string> opt_text(const redisReply* r) {
  if (is_nil(r)) return std::nullopt;
  return text(r);
}

long long integer(const redisReply* r) {
  if (r != nullptr && r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r != nullptr && r->type == REDIS_REPLY_STRING) {
    long long v = 0;
    auto [p, ec] = std::from_chars(r->str, r->str + r->len, v);
    if (ec == std::errc{} && p == r->str + r->len) return v;
  }
  shape(r, "integer");
}

const redisReply* element(const redisReply* r, std::size_t i) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) shape(r, "array");
  if (i >= r->elements) {
    throw QueueError("redis: reply array has " + std::to_string(r->elements) + " elements, wanted #" +
                     std::to_string(i));
  }
  return r->element[i];
}

std::size_t size(const redisReply* r) {
  if (is_nil(r)) return 0;
  if (r->type != REDIS_REPLY_ARRAY) shape(r, "array");
  return r->elements;
}

Connection::Connection(Endpoint endpoint)
    : endpoint_(std::move(endpoint)), display_url_(redact_url(endpoint_.url)), address_(parse_url(endpoint_.url)) {
  const bool ha = address_.kind == Address::Kind::kSentinel;
  replica_acks_ = endpoint_.replica_acks >= 0 ? endpoint_.replica_acks : (ha ? 1 : 0);
  failover_wait_ = endpoint_.failover_wait.count() >= 0 ? endpoint_.failover_wait
                                                         : std::chrono::milliseconds(ha ? 30000 : 0);
  connect();
}

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

void Connection::connect() {
  ctx_.reset();
  if (address_.kind == Address::Kind::kSentinel) {
    connect_via_sentinels();
  } else {
    connect_to(address_.host, address_.port);
  }
}

void Connection::connect_to(const std::string& host, int port) {
  ctx_.reset();
  const timeval tv = to_timeval(endpoint_.connect_timeout);
  const bool unix_socket = address_.kind == Address::Kind::kUnix;
  std::unique_ptr<redisContext, ContextFree> c(unix_socket ? redisConnectUnixWithTimeout(address_.path.c_str(), tv)
                                                           : redisConnectWithTimeout(host.c_str(), port, tv));
  const std::string where = unix_socket ? display_url_ : display_url_ + " (" + host + ":" + std::to_string(port) + ")";
  if (!c) throw QueueError("redis " + where + ": cannot allocate a connection");
  if (c->err != 0) throw Unavailable("redis " + where + ": cannot connect: " + c->errstr);
  if (!unix_socket && redisEnableKeepAlive(c.get()) != REDIS_OK) {
    throw Unavailable("redis " + where + ": cannot enable keepalive: " + c->errstr);
  }
  ctx_ = std::move(c);
  set_timeout(endpoint_.command_timeout);

  // The Endpoint's credentials win over the URL's.
  const std::string& user = endpoint_.username.empty() ? address_.username : endpoint_.username;
  const std::string& pass = endpoint_.password.empty() ? address_.password : endpoint_.password;
  try {
    if (!pass.empty()) {
      if (user.empty()) {
        call({"AUTH", pass});
      } else {
        call({"AUTH", user, pass});
      }
    }
    if (address_.db != 0) call({"SELECT", std::to_string(address_.db)});
  } catch (const QueueError&) {
    ctx_.reset();  // a half-set-up connection must not be reused
    throw;
  }
}

namespace {

// SENTINEL get-master-addr-by-name on one sentinel: host and port, or nullopt (with why) when it
// cannot be reached or knows no such master.
std::optional<std::pair<std::string, int>> ask_sentinel(const std::string& host, int port, const std::string& master,
                                                        std::chrono::milliseconds timeout, std::string& why) {
  const timeval tv = to_timeval(timeout);
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(redisConnectWithTimeout(host.c_str(), port, tv), redisFree);
  const std::string where = "sentinel " + host + ":" + std::to_string(port);
  if (!c || c->err != 0) {
    why = where + ": cannot connect" + (c ? std::string(": ") + c->errstr : "");
    return std::nullopt;
  }
  redisSetTimeout(c.get(), tv);
  const SigpipeGuard sigpipe;
  const char* argv[] = {"SENTINEL", "get-master-addr-by-name", master.c_str()};
  const size_t lens[] = {8, 23, master.size()};
  Reply r(static_cast<redisReply*>(redisCommandArgv(c.get(), 3, argv, lens)));
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
    why = where + (r && r->type == REDIS_REPLY_ERROR ? ": " + std::string(r->str, r->len) : ": knows no master '" + master + "'");
    return std::nullopt;
  }
  try {
    return std::make_pair(text(r->element[0]), static_cast<int>(integer(r->element[1])));
  } catch (const QueueError& e) {
    why = where + ": " + e.what();
    return std::nullopt;
  }
}

}  // namespace

// The sentinels' primary, checked with ROLE: a sentinel may still name a primary that was just
// demoted (or one that came back as a replica), and a write must never go there. Asks every
// sentinel in turn, round after round, for up to failover_wait.
void Connection::connect_via_sentinels() {
  const auto deadline = std::chrono::steady_clock::now() + failover_wait_;
  std::string why = "no sentinel answered";
  for (;;) {
    for (const auto& [host, port] : address_.sentinels) {
      auto primary = ask_sentinel(host, port, address_.master_name, endpoint_.connect_timeout, why);
      if (!primary) continue;
      const std::string where = primary->first + ":" + std::to_string(primary->second);
      try {
        connect_to(primary->first, primary->second);
        Reply role = call({"ROLE"});
        const std::string r = text(element(role.get(), 0));
        if (r == "master") return;
        why = where + " (named by sentinel " + host + ":" + std::to_string(port) + ") is a " + r;
      } catch (const QueueError& e) {
        why = e.what();
      }
      ctx_.reset();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Unavailable("redis " + display_url_ + ": no primary for '" + address_.master_name + "': " + why);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void Connection::wait_replicas() {
  if (replica_acks_ <= 0) return;
  const auto timeout = endpoint_.replica_ack_timeout;
  Reply r = call({"WAIT", std::to_string(replica_acks_), std::to_string(timeout.count())}, false, timeout);
  const long long got = integer(r.get());
  if (got < replica_acks_) {
    throw Unavailable("redis " + display_url_ + ": the write reached " + std::to_string(got) + " of " +
                      std::to_string(replica_acks_) + " replicas within " + std::to_string(timeout.count()) + " ms");
  }
}

redisContext* Connection::context() {
  if (!ctx_) connect();
  return ctx_.get();
}

void Connection::set_timeout(std::chrono::milliseconds timeout) {
  if (redisSetTimeout(ctx_.get(), to_timeval(timeout)) != REDIS_OK) fail("cannot set the socket timeout");
}

void Connection::fail(const std::string& what) {
  std::string detail;
  if (ctx_ && ctx_->err != 0) {
    detail = ctx_->errstr;
    if (ctx_->err == REDIS_ERR_IO && std::strstr(ctx_->errstr, "temporarily unavailable") != nullptr) {
      detail = "timed out waiting for the reply";
    } else if (ctx_->err == REDIS_ERR_EOF) {
      detail = "connection closed by the server";
    }
  }
  ctx_.reset();  // hiredis contexts are unusable after an error; reconnect on next use
  throw Unavailable("redis " + display_url_ + ": " + what + (detail.empty() ? "" : ": " + detail));
}

Reply Connection::call(const std::vector<std::string>& argv, bool allow_error,
                       std::chrono::milliseconds block) {
  if (argv.empty()) throw QueueError("redis: empty command");
  redisContext* c = context();
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  const SigpipeGuard sigpipe;
  const bool extended = block.count() > 0;
  if (extended) set_timeout(endpoint_.command_timeout + block);
  Reply reply(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
  if (!reply) fail(describe(argv));
  if (extended) set_timeout(endpoint_.command_timeout);
  if (lost_primary(reply.get())) {
    ctx_.reset();  // look the primary up again on the next call
    throw Unavailable("redis " + display_url_ + ": " + describe(argv) + ": " + std::string(reply->str, reply->len));
  }
  if (!allow_error && reply->type == REDIS_REPLY_ERROR) {
    throw QueueError("redis " + display_url_ + ": " + describe(argv) + ": " +
                     std::string(reply->str, reply->len));
  }
  return reply;
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  redisContext* c = context();
  const SigpipeGuard sigpipe;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& argv : commands) {
    if (argv.empty()) throw QueueError("redis: empty command in pipeline");
    ptrs.clear();
    lens.clear();
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK) {
      fail("pipeline: " + describe(argv));
    }
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (const auto& argv : commands) {
    void* r = nullptr;
    if (redisGetReply(c, &r) != REDIS_OK || r == nullptr) fail("pipeline: " + describe(argv));
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!lost_primary(replies[i].get())) continue;
    ctx_.reset();
    throw Unavailable("redis " + display_url_ + ": pipeline: " + describe(commands[i]) + ": " + text(replies[i].get()));
  }
  return replies;
}

}  // namespace kjqueue::detail
