// The queue operations (design §8) on top of one Connection. Multi-key writes are the server-side
// functions in queue/lua/kjudge.lua; everything here is reads, blocking reads, and bookkeeping.
#include "kjqueue/queue.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "connection.h"
#include "lua_library.h"

namespace kjqueue {
namespace {

using detail::element;
using detail::integer;
using detail::is_error;
using detail::is_nil;
using detail::opt_text;
using detail::Reply;
using detail::size;
using detail::text;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kTenantCacheTtl = std::chrono::seconds(1);
// With no tenant registered there is no stream to block on: poll the tenant set this often.
constexpr auto kNoTenantPoll = milliseconds(100);
// Events read per XREAD while waiting for one result.
constexpr const char* kWaitBatch = "1000";

// A name for an error message: short, printable.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) out += (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  if (s.size() > 80) out += "...";
  return out + "'";
}

void require_tenant(const std::string& tenant) {
  if (!valid_tenant(tenant)) throw QueueError("invalid tenant " + quoted(tenant) + " (want [a-z0-9_-]{1,64})");
}

void require_job_id(const std::string& job_id) {
  if (!valid_job_id(job_id)) {
    throw QueueError("invalid job id " + quoted(job_id) + " (want [A-Za-z0-9._:-]{1,128})");
  }
}

bool starts_with(const redisReply* r, std::string_view prefix) {
  return r != nullptr && r->len >= prefix.size() && std::string_view(r->str, prefix.size()) == prefix;
}

milliseconds left_until(Clock::time_point deadline) {
  return std::max(milliseconds{0}, std::chrono::ceil<milliseconds>(deadline - Clock::now()));
}

// One stream entry [id, [field, value, ...]] of `tenant`'s jobs stream. The field list may be
// nil (an entry deleted while pending); fields may be anything.
Delivery to_delivery(int partition, const std::string& tenant, const redisReply* entry) {
  Delivery d;
  d.partition = partition;
  d.tenant = tenant;
  d.entry_id = text(element(entry, 0));
  const redisReply* kv = element(entry, 1);
  for (std::size_t i = 0; i + 1 < size(kv); i += 2) {
    auto field = opt_text(element(kv, i));
    if (!field) continue;
    d.fields[*field] = opt_text(element(kv, i + 1)).value_or("");
  }
  if (auto it = d.fields.find("id"); it != d.fields.end()) d.job_id = it->second;
  if (auto it = d.fields.find("job"); it != d.fields.end()) d.payload = it->second;
  return d;
}

// "0-0" when the stream is empty or missing.
std::string last_entry_id(detail::Connection& conn, const std::string& stream) {
  Reply r = conn.call({"XREVRANGE", stream, "+", "-", "COUNT", "1"});
  if (size(r.get()) == 0) return "0-0";
  return text(element(element(r.get(), 0), 0));
}

void flatten(const redisReply* r, std::vector<std::optional<std::string>>& out) {
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
    for (std::size_t i = 0; i < r->elements; ++i) flatten(r->element[i], out);
  } else {
    out.push_back(opt_text(r));
  }
}

}  // namespace

struct Queue::Impl {
  Impl(Endpoint endpoint, int partition) : partition(partition), conn(std::move(endpoint)) {}

  int partition;
  detail::Connection conn;

  // Registered tenants (valid names only, sorted) and when they were read.
  std::vector<std::string> tenants;
  std::optional<Clock::time_point> tenants_read;

  void refresh_tenants(bool force);
  Reply fcall(std::vector<std::string> argv);
  void load_functions();
};

void Queue::Impl::load_functions() {
  conn.call({"FUNCTION", "LOAD", "REPLACE", std::string(detail::kLuaLibrary)});
}

// FCALL, loading the library once if the server lost it (a restarted Redis without persistence
// forgets functions; the daemon must not need a restart for that).
Reply Queue::Impl::fcall(std::vector<std::string> argv) {
  for (int attempt = 0;; ++attempt) {
    Reply r = conn.call(argv, /*allow_error=*/true);
    if (!is_error(r.get())) return r;
    if (attempt == 0 && starts_with(r.get(), "ERR Function not found")) {
      load_functions();
      continue;
    }
    throw QueueError("redis " + conn.url() + ": FCALL " + argv.at(1) + ": " + text(r.get()));
  }
}

// SMEMBERS of the tenant set, cached for kTenantCacheTtl. On every real read, make sure each
// tenant's stream has the group: a stream created behind kj_submit's back (XADD by hand, a
// restore) would otherwise fail XREADGROUP with NOGROUP.
void Queue::Impl::refresh_tenants(bool force) {
  if (!force && tenants_read && Clock::now() - *tenants_read < kTenantCacheTtl) return;
  Reply r = conn.call({"SMEMBERS", Keys::tenants(partition)});
  std::vector<std::string> fresh;
  for (std::size_t i = 0; i < size(r.get()); ++i) {
    std::string t = text(element(r.get(), i));
    // Only kj_submit adds members and it validates; anything else cannot name a stream of ours.
    if (valid_tenant(t)) fresh.push_back(std::move(t));
  }
  std::sort(fresh.begin(), fresh.end());
  if (!fresh.empty()) {
    std::vector<std::vector<std::string>> cmds;
    for (const auto& t : fresh) {
      cmds.push_back({"XGROUP", "CREATE", Keys::jobs(partition, t), Keys::kGroup, "0", "MKSTREAM"});
    }
    auto replies = conn.pipeline(cmds);
    std::vector<std::string> usable;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      // A key that is not a stream (WRONGTYPE) cannot be read; it must not stop every other
      // tenant's jobs. status() reports it.
      if (!is_error(replies[i].get()) || starts_with(replies[i].get(), "BUSYGROUP")) {
        usable.push_back(std::move(fresh[i]));
      }
    }
    fresh = std::move(usable);
  }
  tenants = std::move(fresh);
  tenants_read = Clock::now();
}

Queue::Queue(Endpoint endpoint, int partition) {
  if (partition < 0) throw QueueError("invalid partition " + std::to_string(partition));
  impl_ = std::make_unique<Impl>(std::move(endpoint), partition);
}

Queue::~Queue() = default;
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;

int Queue::partition() const { return impl_->partition; }

void Queue::load_functions() { impl_->load_functions(); }

SubmitResult Queue::submit(const std::string& tenant, const std::string& job_id, const std::string& payload) {
  require_tenant(tenant);
  require_job_id(job_id);
  const int p = impl_->partition;
  Reply r = impl_->fcall({"FCALL", "kj_submit", "3", Keys::jobs(p, tenant), Keys::job_marker(p, tenant, job_id),
                          Keys::tenants(p), job_id, payload, tenant});
  SubmitResult out;
  out.entry_id = text(element(r.get(), 0));
  out.duplicate = integer(element(r.get(), 1)) != 0;
  return out;
}

std::vector<Delivery> Queue::fetch(const std::string& consumer, std::size_t max, milliseconds block) {
  if (consumer.empty()) throw QueueError("fetch: empty consumer name");
  if (max == 0) return {};
  Impl& im = *impl_;
  const auto deadline = Clock::now() + std::max(block, milliseconds{0});

  im.refresh_tenants(false);
  for (int attempt = 0;; ++attempt) {
    while (im.tenants.empty()) {
      const auto left = left_until(deadline);
      if (left.count() == 0) return {};
      std::this_thread::sleep_for(std::min<milliseconds>(left, kNoTenantPoll));
      im.refresh_tenants(true);
    }
    // COUNT applies per stream (XREADGROUP semantics), so one call may return up to
    // max × tenants entries; all of them are pending on this consumer and are returned.
    const auto left = left_until(deadline);
    std::vector<std::string> argv = {"XREADGROUP", "GROUP", Keys::kGroup, consumer, "COUNT", std::to_string(max)};
    if (left.count() > 0) {  // BLOCK 0 would mean "forever"
      argv.push_back("BLOCK");
      argv.push_back(std::to_string(left.count()));
    }
    argv.push_back("STREAMS");
    std::map<std::string, std::string> tenant_of;
    for (const auto& t : im.tenants) {
      argv.push_back(Keys::jobs(im.partition, t));
      tenant_of[argv.back()] = t;
    }
    argv.insert(argv.end(), im.tenants.size(), ">");

    Reply r = im.conn.call(argv, /*allow_error=*/true, left);
    if (is_error(r.get())) {
      if (attempt == 0 && starts_with(r.get(), "NOGROUP")) {  // a stream was deleted under us
        im.refresh_tenants(true);
        continue;
      }
      im.tenants_read.reset();  // re-read the tenants (and skip a broken one) next time
      throw QueueError("redis " + im.conn.url() + ": XREADGROUP: " + text(r.get()));
    }
    std::vector<Delivery> out;
    for (std::size_t s = 0; s < size(r.get()); ++s) {  // nil (timeout) has size 0
      const redisReply* stream = element(r.get(), s);
      const std::string key = text(element(stream, 0));
      auto it = tenant_of.find(key);
      if (it == tenant_of.end()) throw QueueError("XREADGROUP returned an unknown stream " + quoted(key));
      const redisReply* entries = element(stream, 1);
      for (std::size_t e = 0; e < size(entries); ++e) {
        out.push_back(to_delivery(im.partition, it->second, element(entries, e)));
      }
    }
    return out;
  }
}

bool Queue::complete(const Delivery& delivery, const std::string& job_id, const std::string& result_bytes,
                     const std::string& verdict_name, std::chrono::seconds ttl) {
  require_tenant(delivery.tenant);
  if (ttl.count() < 1) throw QueueError("complete: result ttl must be at least 1 s");
  // An entry without a usable job id still gets its (INVALID_JOB) result stored and acked; it
  // is filed under "#<entry id>", which no valid job id can collide with.
  const std::string id = valid_job_id(job_id) ? job_id : "#" + delivery.entry_id;
  const int p = delivery.partition;
  Reply r = impl_->fcall({"FCALL", "kj_complete", "3", Keys::result(p, delivery.tenant, id),
                          Keys::done(p, delivery.tenant), Keys::jobs(p, delivery.tenant), delivery.entry_id, id,
                          result_bytes, verdict_name, std::to_string(ttl.count())});
  return integer(r.get()) == 1;
}

std::optional<std::string> Queue::get_result(const std::string& tenant, const std::string& job_id) {
  require_tenant(tenant);
  require_job_id(job_id);
  Reply r = impl_->conn.call({"GET", Keys::result(impl_->partition, tenant, job_id)});
  return opt_text(r.get());
}

// No race: kj_complete stores the result and appends the event atomically. We note the last
// event id *before* looking at the result, so a completion that lands after the GET has an
// event after that id and XREAD sees it.
std::optional<std::string> Queue::wait_result(const std::string& tenant, const std::string& job_id,
                                              milliseconds timeout) {
  require_tenant(tenant);
  require_job_id(job_id);
  Impl& im = *impl_;
  const auto deadline = Clock::now() + std::max(timeout, milliseconds{0});
  const std::string done = Keys::done(im.partition, tenant);
  std::string last = last_entry_id(im.conn, done);
  if (auto r = get_result(tenant, job_id)) return r;

  for (;;) {
    const auto left = left_until(deadline);
    if (left.count() == 0) break;
    Reply r = im.conn.call({"XREAD", "COUNT", kWaitBatch, "BLOCK", std::to_string(left.count()), "STREAMS", done, last},
                           /*allow_error=*/false, left);
    if (is_nil(r.get())) break;  // timed out
    bool seen = false;
    for (std::size_t s = 0; s < size(r.get()); ++s) {
      const redisReply* entries = element(element(r.get(), s), 1);
      for (std::size_t e = 0; e < size(entries); ++e) {
        const redisReply* entry = element(entries, e);
        last = text(element(entry, 0));
        const redisReply* kv = element(entry, 1);
        for (std::size_t i = 0; i + 1 < size(kv); i += 2) {
          if (opt_text(element(kv, i)) == "id" && opt_text(element(kv, i + 1)) == job_id) seen = true;
        }
      }
    }
    if (seen) break;
  }
  return get_result(tenant, job_id);
}

void Queue::heartbeat(const std::string& node, const std::string& info_json, std::chrono::seconds ttl) {
  if (!valid_job_id(node)) throw QueueError("invalid node name " + quoted(node) + " (want [A-Za-z0-9._:-]{1,128})");
  if (ttl.count() < 1) throw QueueError("heartbeat: ttl must be at least 1 s");
  impl_->conn.call({"SET", Keys::node(impl_->partition, node), info_json, "EX", std::to_string(ttl.count())});
}

QueueStatus Queue::status() {
  Impl& im = *impl_;
  const int p = im.partition;
  QueueStatus out;

  Reply members = im.conn.call({"SMEMBERS", Keys::tenants(p)});
  std::vector<std::string> tenants;
  for (std::size_t i = 0; i < size(members.get()); ++i) {
    std::string t = text(element(members.get(), i));
    if (valid_tenant(t)) tenants.push_back(std::move(t));
  }
  std::sort(tenants.begin(), tenants.end());

  std::vector<std::vector<std::string>> cmds;
  for (const auto& t : tenants) {
    cmds.push_back({"XLEN", Keys::jobs(p, t)});
    cmds.push_back({"XINFO", "GROUPS", Keys::jobs(p, t)});  // errors when the stream is missing
    cmds.push_back({"XLEN", Keys::done(p, t)});
  }
  auto replies = cmds.empty() ? std::vector<Reply>{} : im.conn.pipeline(cmds);
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const redisReply* xlen = replies[3 * i].get();
    const redisReply* groups = replies[3 * i + 1].get();
    const redisReply* done = replies[3 * i + 2].get();
    if (is_error(xlen)) throw QueueError("redis " + im.conn.url() + ": XLEN " + cmds[3 * i][1] + ": " + text(xlen));
    if (is_error(done)) {
      throw QueueError("redis " + im.conn.url() + ": XLEN " + cmds[3 * i + 2][1] + ": " + text(done));
    }
    TenantStatus ts;
    ts.tenant = tenants[i];
    ts.queued = static_cast<std::uint64_t>(integer(xlen));
    ts.completed = static_cast<std::uint64_t>(integer(done));
    ts.lag = ts.queued;  // no group yet: nothing was ever delivered
    if (!is_error(groups)) {
      for (std::size_t g = 0; g < size(groups); ++g) {
        const redisReply* info = element(groups, g);
        std::map<std::string, const redisReply*> kv;
        for (std::size_t k = 0; k + 1 < size(info); k += 2) kv[text(element(info, k))] = element(info, k + 1);
        if (kv.count("name") == 0 || text(kv["name"]) != Keys::kGroup) continue;
        ts.pending = kv.count("pending") ? static_cast<std::uint64_t>(integer(kv["pending"])) : 0;
        if (kv.count("lag") && !is_nil(kv["lag"])) {
          ts.lag = static_cast<std::uint64_t>(integer(kv["lag"]));
        } else if (kv.count("last-delivered-id") && text(kv["last-delivered-id"]) != "0-0") {
          // Redis cannot tell (entries were deleted mid-stream): estimate from the length, which
          // is exact while the stream is trimmed below its oldest pending entry (design §8).
          ts.lag = ts.queued > ts.pending ? ts.queued - ts.pending : 0;
        }
        break;
      }
    }
    out.tenants.push_back(std::move(ts));
  }

  // Nodes: SCAN (never KEYS) over this partition's heartbeat keys.
  const std::string prefix = Keys::node(p, "");
  std::set<std::string> keys;  // SCAN may return a key twice
  std::string cursor = "0";
  do {
    Reply r = im.conn.call({"SCAN", cursor, "MATCH", prefix + "*", "COUNT", "1000"});
    cursor = text(element(r.get(), 0));
    const redisReply* batch = element(r.get(), 1);
    for (std::size_t i = 0; i < size(batch); ++i) keys.insert(text(element(batch, i)));
  } while (cursor != "0");
  if (!keys.empty()) {
    std::vector<std::vector<std::string>> node_cmds;
    for (const auto& k : keys) {
      node_cmds.push_back({"GET", k});
      node_cmds.push_back({"PTTL", k});
    }
    auto node_replies = im.conn.pipeline(node_cmds);
    std::size_t i = 0;
    for (const auto& k : keys) {
      const redisReply* info = node_replies[2 * i].get();
      const redisReply* ttl = node_replies[2 * i + 1].get();
      ++i;
      if (is_nil(info) || is_error(info) || is_error(ttl)) continue;  // expired between SCAN and GET
      NodeStatus ns;
      ns.node = k.substr(prefix.size());
      ns.info = text(info);
      ns.ttl_ms = integer(ttl);
      out.nodes.push_back(std::move(ns));
    }
  }
  return out;
}

std::vector<std::optional<std::string>> Queue::command(const std::vector<std::string>& argv) {
  Reply r = impl_->conn.call(argv);
  std::vector<std::optional<std::string>> out;
  flatten(r.get(), out);
  return out;
}

}  // namespace kjqueue
