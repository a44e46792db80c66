// The queue operations (design §8) on top of one Connection. Multi-key writes are the server-side
// functions in queue/lua/kjudge.lua; everything here is reads, blocking reads, and bookkeeping.
#include "kjqueue/queue.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "connection.h"
#include "lua_library.h"
#include "staged_result.h"

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

constexpr auto kTenantCacheTtl = std::chrono::milliseconds(500);
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
Delivery to_delivery(int partition, const std::string& tenant, int lane, const redisReply* entry) {
  Delivery d;
  d.partition = partition;
  d.tenant = tenant;
  d.lane = lane;
  d.entry_id = text(element(entry, 0));
  const redisReply* kv = element(entry, 1);
  for (std::size_t i = 0; i + 1 < size(kv); i += 2) {
    auto field = opt_text(element(kv, i));
    if (!field) continue;
    d.fields[*field] = opt_text(element(kv, i + 1)).value_or("");
  }
  if (auto it = d.fields.find("id"); it != d.fields.end()) d.job_id = it->second;
  if (auto it = d.fields.find("job"); it != d.fields.end()) d.payload = it->second;
  if (auto it = d.fields.find("batch"); it != d.fields.end() && valid_job_id(it->second)) d.batch_id = it->second;
  if (auto it = d.fields.find("attempt"); it != d.fields.end()) {
    try {
      d.attempt = static_cast<std::uint32_t>(std::min<unsigned long>(std::stoul(it->second), 1000000));
    } catch (const std::exception&) {
      d.attempt = 0;  // garbage attempt field: counted from zero
    }
  }
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
  std::set<std::string> build_groups;  // tenants whose build request groups this connection made

  void refresh_tenants(bool force);
  Reply fcall(std::vector<std::string> argv);
  void load_functions();

  // f(), again while it throws Unavailable (a failover in progress) for up to the endpoint's
  // failover_wait. Only for calls that may safely run twice (idempotent writes, reads).
  template <class F>
  auto across_failover(F&& f) -> decltype(f()) {
    const auto deadline = Clock::now() + conn.failover_wait();
    for (;;) {
      try {
        return f();
      } catch (const Unavailable&) {
        if (Clock::now() >= deadline) throw;
        std::this_thread::sleep_for(milliseconds(200));
      }
    }
  }
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
  // With no tenant yet, look again soon: the first job of the first tenant should not wait.
  const auto ttl = tenants.empty() ? kNoTenantPoll : kTenantCacheTtl;
  if (!force && tenants_read && Clock::now() - *tenants_read < ttl) return;
  Reply r = conn.call({"SMEMBERS", Keys::tenants(partition)});
  std::vector<std::string> fresh;
  for (std::size_t i = 0; i < size(r.get()); ++i) {
    std::string t = text(element(r.get(), i));
    // Only kj_submit adds members and it validates; anything else cannot name a stream of ours.
    if (valid_tenant(t)) fresh.push_back(std::move(t));
  }
  std::sort(fresh.begin(), fresh.end());
  // Groups are made for tenants not seen before only (docs/capacity-plan.md step 3: 3 commands
  // per tenant every 0.5 s on every node otherwise); a forced read (after NOGROUP: a stream
  // deleted and made again behind kj_submit's back) makes them for every tenant.
  const bool regroup = force || !tenants_read;  // reset after a NOGROUP or WRONGTYPE reply
  std::vector<std::string> known, unseen;
  for (auto& t : fresh)
    (!regroup && std::binary_search(tenants.begin(), tenants.end(), t) ? known : unseen).push_back(std::move(t));
  if (!unseen.empty()) {
    std::vector<std::vector<std::string>> cmds;
    for (const auto& t : unseen)
      for (int lane : kLanes) cmds.push_back({"XGROUP", "CREATE", Keys::jobs(partition, t, lane), Keys::kGroup, "0", "MKSTREAM"});
    auto replies = conn.pipeline(cmds);
    const std::size_t lanes = std::size(kLanes);
    for (std::size_t i = 0; i < unseen.size(); ++i) {
      // A key that is not a stream (WRONGTYPE) cannot be read; it must not stop every other
      // tenant's jobs. status() reports it.
      bool ok = true;
      for (std::size_t l = 0; l < lanes; ++l) {
        const redisReply* r = replies[i * lanes + l].get();
        ok = ok && (!is_error(r) || starts_with(r, "BUSYGROUP"));
      }
      if (ok) known.push_back(std::move(unseen[i]));
    }
    std::sort(known.begin(), known.end());
  }
  fresh = std::move(known);
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
  // Acknowledged only once a replica has it (replica acks); a retry is a duplicate at worst.
  return impl_->across_failover([&] {
    Reply r = impl_->fcall({"FCALL", "kj_submit", "3", Keys::jobs(p, tenant), Keys::job_marker(p, tenant, job_id),
                            Keys::tenants(p), job_id, payload, tenant});
    SubmitResult out;
    out.entry_id = text(element(r.get(), 0));
    out.duplicate = integer(element(r.get(), 1)) != 0;
    impl_->conn.wait_replicas();
    return out;
  });
}

SubmitResult Queue::submit(const std::string& tenant, const std::string& job_id, const std::string& payload,
                           const SubmitOptions& options) {
  require_tenant(tenant);
  require_job_id(job_id);
  if (!options.batch_id.empty() && !valid_job_id(options.batch_id)) {
    throw QueueError("invalid batch id " + quoted(options.batch_id) + " (want [A-Za-z0-9._:-]{1,128})");
  }
  const int p = impl_->partition;
  if (options.lane < -1 || options.lane > 1) throw QueueError("invalid lane " + std::to_string(options.lane));
  std::vector<std::string> argv = {"FCALL", "kj_submit", options.batch_id.empty() ? "3" : "4",
                                   Keys::jobs(p, tenant, options.lane), Keys::job_marker(p, tenant, job_id),
                                   Keys::queued(p, tenant)};
  if (!options.batch_id.empty()) argv.push_back(Keys::batch(p, tenant, options.batch_id));
  for (const std::string& a : {job_id, payload, tenant, Keys::tenants(p), Keys::quotas(p), options.batch_id,
                               std::to_string(options.batch_size)})
    argv.push_back(a);
  return impl_->across_failover([&] {
    Reply r = impl_->conn.call(argv, /*allow_error=*/true);
    if (is_error(r.get()) && starts_with(r.get(), "ERR Function not found")) {
      impl_->load_functions();
      r = impl_->conn.call(argv, /*allow_error=*/true);
    }
    if (is_error(r.get())) {
      if (starts_with(r.get(), "QUEUEFULL")) throw QueueFull(text(r.get()).substr(10));
      throw QueueError("redis " + impl_->conn.url() + ": FCALL kj_submit: " + text(r.get()));
    }
    SubmitResult out;
    out.entry_id = text(element(r.get(), 0));
    out.duplicate = integer(element(r.get(), 1)) != 0;
    impl_->conn.wait_replicas();  // kj_submit writes even for a duplicate, so this WAIT covers the original
    return out;
  });
}

std::vector<std::string> Queue::tenants(bool force) {
  impl_->refresh_tenants(force);
  return impl_->tenants;
}

std::vector<Delivery> Queue::read_new(const std::string& consumer,
                                      const std::vector<std::pair<std::string, std::size_t>>& want, milliseconds aging,
                                      milliseconds cap_lease) {
  if (consumer.empty()) throw QueueError("read_new: empty consumer name");
  const auto now_ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> names;
  const int p = impl_->partition;
  for (const auto& [t, n] : want) {
    if (n == 0) continue;
    require_tenant(t);
    std::vector<std::string> c = {"FCALL", "kj_fetch", "4", Keys::jobs(p, t, kLanes[0]), Keys::jobs(p, t, kLanes[1]),
                                  Keys::jobs(p, t, kLanes[2]), Keys::running(p, t), consumer, std::to_string(n),
                                  std::to_string(std::max<long long>(0, aging.count())), std::to_string(now_ms)};
    if (cap_lease.count() > 0)
      for (const std::string& a : {t, Keys::caps(p), std::to_string(cap_lease.count())}) c.push_back(a);
    cmds.push_back(std::move(c));
    names.push_back(t);
  }
  std::vector<Delivery> out;
  if (cmds.empty()) return out;
  auto replies = impl_->conn.pipeline(cmds);
  if (!replies.empty() && starts_with(replies[0].get(), "ERR Function not found")) {
    impl_->load_functions();
    replies = impl_->conn.pipeline(cmds);
  }
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const redisReply* r = replies[i].get();
    if (is_error(r)) {
      impl_->tenants_read.reset();  // NOGROUP (stream deleted) or WRONGTYPE: re-read tenants next time
      continue;
    }
    for (std::size_t k = 0; k + 1 < size(r); k += 2) {
      const long long lane_index = integer(element(r, k));
      if (lane_index < 1 || lane_index > 3) continue;
      out.push_back(to_delivery(p, names[i], kLanes[lane_index - 1], element(r, k + 1)));
    }
  }
  return out;
}

std::vector<Delivery> Queue::read_blocking(const std::string& consumer, const std::vector<std::string>& tenants,
                                           milliseconds block) {
  if (tenants.empty()) {
    if (block.count() > 0) std::this_thread::sleep_for(std::min<milliseconds>(block, kNoTenantPoll));
    return {};
  }
  std::vector<std::string> argv = {"XREADGROUP", "GROUP", Keys::kGroup, consumer, "COUNT", "1"};
  if (block.count() > 0) {
    argv.push_back("BLOCK");
    argv.push_back(std::to_string(block.count()));
  }
  argv.push_back("STREAMS");
  std::map<std::string, std::pair<std::string, int>> stream_of;  // key -> (tenant, lane)
  for (const auto& t : tenants) {
    require_tenant(t);
    for (int lane : kLanes) {
      argv.push_back(Keys::jobs(impl_->partition, t, lane));
      stream_of[argv.back()] = {t, lane};
    }
  }
  argv.insert(argv.end(), stream_of.size(), ">");
  Reply r = impl_->conn.call(argv, /*allow_error=*/true, block);
  if (is_error(r.get())) {
    impl_->tenants_read.reset();
    throw QueueError("redis " + impl_->conn.url() + ": XREADGROUP: " + text(r.get()));
  }
  std::vector<Delivery> out;
  for (std::size_t s = 0; s < size(r.get()); ++s) {
    const redisReply* stream = element(r.get(), s);
    auto it = stream_of.find(text(element(stream, 0)));
    if (it == stream_of.end()) continue;
    const redisReply* entries = element(stream, 1);
    for (std::size_t e = 0; e < size(entries); ++e)
      out.push_back(to_delivery(impl_->partition, it->second.first, it->second.second, element(entries, e)));
  }
  return out;
}

std::vector<Delivery> Queue::reclaim(const std::string& consumer, milliseconds min_idle, std::size_t max) {
  impl_->refresh_tenants(false);
  return reclaim(consumer, min_idle, max, impl_->tenants);
}

std::vector<std::string> Queue::idle_tenants(milliseconds min_idle) {
  Impl& im = *impl_;
  im.refresh_tenants(false);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& t : im.tenants)
    for (int lane : kLanes)
      cmds.push_back({"XPENDING", Keys::jobs(im.partition, t, lane), Keys::kGroup, "IDLE", std::to_string(min_idle.count()),
                      "-", "+", "1"});
  auto replies = im.conn.pipeline(cmds);
  std::vector<std::string> out;
  const std::size_t lanes = std::size(kLanes);
  for (std::size_t i = 0; i < im.tenants.size(); ++i)
    for (std::size_t l = 0; l < lanes; ++l) {
      const redisReply* r = replies[i * lanes + l].get();
      if (!is_error(r) && size(r) > 0) {
        out.push_back(im.tenants[i]);
        break;
      }
    }
  return out;
}

std::vector<Delivery> Queue::reclaim(const std::string& consumer, milliseconds min_idle, std::size_t max,
                                     const std::vector<std::string>& only) {
  Impl& im = *impl_;
  std::vector<Delivery> out;
  for (const auto& t : only)
  for (int lane : kLanes) {
    if (out.size() >= max) break;
    if (!valid_tenant(t)) break;
    const std::string stream = Keys::jobs(im.partition, t, lane);
    Reply r = im.conn.call({"XAUTOCLAIM", stream, Keys::kGroup, consumer, std::to_string(min_idle.count()), "0-0",
                            "COUNT", std::to_string(max - out.size())},
                           /*allow_error=*/true);
    if (is_error(r.get())) continue;
    const redisReply* claimed = element(r.get(), 1);
    std::vector<Delivery> got;
    for (std::size_t e = 0; e < size(claimed); ++e) {
      const redisReply* entry = element(claimed, e);
      if (is_nil(element(entry, 1)) && size(entry) >= 2) {
        // deleted while pending (trimmed/XDEL'd): nothing to run; ack it so it stops coming back
        im.conn.call({"XACK", stream, Keys::kGroup, text(element(entry, 0))}, true);
        continue;
      }
      got.push_back(to_delivery(im.partition, t, lane, entry));
    }
    // Redis 7 also lists deleted ids (third element): they are gone from the PEL already.
    if (got.empty()) continue;
    std::vector<std::vector<std::string>> cmds;
    for (const auto& d : got) cmds.push_back({"XPENDING", stream, Keys::kGroup, d.entry_id, d.entry_id, "1"});
    auto counts = im.conn.pipeline(cmds);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const redisReply* row = element(counts[i].get(), 0);
      if (!is_error(counts[i].get()) && size(counts[i].get()) == 1) {
        got[i].deliveries = static_cast<std::uint32_t>(integer(element(row, 3)));
      }
      out.push_back(std::move(got[i]));
    }
  }
  return out;
}

namespace {
std::vector<std::string> lease_call(detail::Connection& conn, int p, const std::string& mode, const std::string& tenant,
                                    int lane, const std::string& consumer, const std::vector<std::string>& ids,
                                    milliseconds lease) {
  if (ids.empty()) return {};
  require_tenant(tenant);
  std::vector<std::string> argv = {"FCALL", "kj_lease", "1", Keys::jobs(p, tenant, lane), mode, consumer,
                                   std::to_string(std::max<long long>(1, lease.count()))};
  argv.insert(argv.end(), ids.begin(), ids.end());
  Reply r = conn.call(argv, /*allow_error=*/true);
  if (is_error(r.get())) throw QueueError("redis " + conn.url() + ": FCALL kj_lease: " + text(r.get()));
  std::vector<std::string> lost;
  for (std::size_t i = 0; i < size(r.get()); ++i) lost.push_back(text(element(r.get(), i)));
  return lost;
}
}  // namespace

std::vector<std::string> Queue::renew(const std::string& tenant, const std::string& consumer,
                                      const std::vector<std::string>& ids, milliseconds lease, int lane) {
  return lease_call(impl_->conn, impl_->partition, "renew", tenant, lane, consumer, ids, lease);
}

std::vector<std::string> Queue::hand_back(const std::string& tenant, const std::string& consumer,
                                          const std::vector<std::string>& ids, milliseconds lease, int lane) {
  return lease_call(impl_->conn, impl_->partition, "handback", tenant, lane, consumer, ids, lease);
}

std::vector<Delivery> Queue::unfinished(const std::string& tenant, int lane, std::size_t max) {
  require_tenant(tenant);
  Impl& im = *impl_;
  const std::string key = Keys::jobs(im.partition, tenant, lane);
  Reply summary = im.conn.call({"XPENDING", key, Keys::kGroup}, true);
  if (is_error(summary.get())) return {};  // no stream or no group yet
  std::string from;
  if (size(summary.get()) >= 2 && integer(element(summary.get(), 0)) > 0) {
    from = text(element(summary.get(), 1));
  } else {
    Reply groups = im.conn.call({"XINFO", "GROUPS", key}, true);
    std::string last = "0-0";
    for (std::size_t g = 0; !is_error(groups.get()) && g < size(groups.get()); ++g) {
      const redisReply* info = element(groups.get(), g);
      std::map<std::string, std::string> f;
      for (std::size_t i = 0; i + 1 < size(info); i += 2) {
        auto k = opt_text(element(info, i));
        const redisReply* v = element(info, i + 1);
        if (k && v && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS)) f[*k] = text(v);
      }
      if (f["name"] == Keys::kGroup) last = f["last-delivered-id"];
    }
    from = "(" + last;
  }
  Reply r = im.conn.call({"XRANGE", key, from, "+", "COUNT", std::to_string(std::max<std::size_t>(max, 1))});
  std::vector<Delivery> out;
  for (std::size_t i = 0; i < size(r.get()); ++i) out.push_back(to_delivery(im.partition, tenant, lane, element(r.get(), i)));
  return out;
}

std::vector<EntryRef> Queue::pending_of(const std::string& consumer) {
  Impl& im = *impl_;
  im.refresh_tenants(true);
  std::vector<EntryRef> out;
  for (const auto& t : im.tenants)
    for (int lane : kLanes) {
      Reply r = im.conn.call({"XPENDING", Keys::jobs(im.partition, t, lane), Keys::kGroup, "-", "+", "100000", consumer},
                             true);
      if (is_error(r.get())) continue;
      for (std::size_t i = 0; i < size(r.get()); ++i) out.push_back({t, lane, text(element(element(r.get(), i), 0))});
    }
  return out;
}

bool Queue::retry_later(const Delivery& d, const std::string& job_id, std::uint32_t attempt,
                        std::chrono::system_clock::time_point due) {
  require_tenant(d.tenant);
  require_job_id(job_id);
  const int p = d.partition;
  const auto due_ms = std::chrono::duration_cast<milliseconds>(due.time_since_epoch()).count();
  Reply r = impl_->fcall({"FCALL", "kj_retry", "4", Keys::jobs(p, d.tenant, d.lane), Keys::result(p, d.tenant, job_id),
                          Keys::retry(p, d.tenant), Keys::delayed(p, d.tenant), d.entry_id, job_id,
                          d.payload.value_or(""), std::to_string(attempt), std::to_string(due_ms), d.batch_id,
                          std::to_string(d.lane)});
  return integer(r.get()) == 1;
}

namespace {
// A fenced FCALL: FENCED (the caller is no longer the housekeeper) becomes Fenced.
Reply fenced_call(detail::Connection& conn, std::vector<std::string> argv, const Fence* fence, int partition) {
  if (fence) {
    argv.push_back(Keys::housekeeper(partition));
    argv.push_back(std::to_string(fence->token));
  }
  Reply r = conn.call(argv, /*allow_error=*/true);
  if (is_error(r.get()) && starts_with(r.get(), "FENCED")) throw Fenced(text(r.get()));
  if (is_error(r.get())) throw QueueError("redis " + conn.url() + ": FCALL " + argv.at(1) + ": " + text(r.get()));
  return r;
}
}  // namespace

std::size_t Queue::promote_due() { return promote_due_impl(nullptr); }
std::size_t Queue::promote_due(const Fence& fence) { return promote_due_impl(&fence); }
std::size_t Queue::trim() { return trim_impl(nullptr); }
std::size_t Queue::trim(const Fence& fence) { return trim_impl(&fence); }

std::size_t Queue::promote_due_impl(const Fence* fence) {
  Impl& im = *impl_;
  im.refresh_tenants(false);
  if (im.tenants.empty()) return 0;
  // Cheap first: which tenants have anything parked at all.
  std::vector<std::vector<std::string>> probes;
  for (const auto& t : im.tenants) probes.push_back({"ZCARD", Keys::delayed(im.partition, t)});
  auto cards = im.conn.pipeline(probes);
  const auto now_ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::size_t moved = 0;
  for (std::size_t i = 0; i < im.tenants.size(); ++i) {
    if (is_error(cards[i].get()) || integer(cards[i].get()) == 0) continue;
    const auto& t = im.tenants[i];
    std::vector<std::string> argv = {"FCALL", "kj_promote", "5", Keys::jobs(im.partition, t), Keys::retry(im.partition, t),
                                     Keys::delayed(im.partition, t), Keys::jobs(im.partition, t, 1),
                                     Keys::jobs(im.partition, t, -1), std::to_string(now_ms), "100"};
    Reply r = fence ? fenced_call(im.conn, argv, fence, im.partition) : im.fcall(argv);
    moved += static_cast<std::size_t>(integer(r.get()));
  }
  return moved;
}

std::size_t Queue::trim_impl(const Fence* fence) {
  Impl& im = *impl_;
  im.refresh_tenants(false);
  std::size_t removed = 0;
  for (const auto& t : im.tenants)
    for (int lane : kLanes) {
      std::vector<std::string> argv = {"FCALL", "kj_trim", "1", Keys::jobs(im.partition, t, lane)};
      Reply r = fence ? fenced_call(im.conn, argv, fence, im.partition) : im.fcall(argv);
      removed += static_cast<std::size_t>(integer(r.get()));
    }
  return removed;
}

void Queue::cancel_job(const std::string& tenant, const std::string& job_id, std::chrono::seconds ttl) {
  require_tenant(tenant);
  require_job_id(job_id);
  impl_->fcall({"FCALL", "kj_cancel", "1", Keys::cancel(impl_->partition, tenant, job_id), std::to_string(ttl.count())});
}

void Queue::cancel_batch(const std::string& tenant, const std::string& batch_id, std::chrono::seconds ttl) {
  require_tenant(tenant);
  require_job_id(batch_id);
  impl_->fcall({"FCALL", "kj_cancel", "1", Keys::batch_cancel(impl_->partition, tenant, batch_id),
                std::to_string(ttl.count())});
}

std::vector<bool> Queue::cancelled(const std::vector<std::tuple<std::string, std::string, std::string>>& jobs) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [t, j, b] : jobs) {
    std::vector<std::string> c = {"EXISTS"};
    if (valid_tenant(t) && valid_job_id(j)) c.push_back(Keys::cancel(impl_->partition, t, j));
    if (valid_tenant(t) && valid_job_id(b)) c.push_back(Keys::batch_cancel(impl_->partition, t, b));
    if (c.size() == 1) c.push_back(Keys::cancel(impl_->partition, "-", "-"));  // never set
    cmds.push_back(std::move(c));
  }
  std::vector<bool> out;
  if (cmds.empty()) return out;
  auto replies = impl_->conn.pipeline(cmds);
  for (auto& r : replies) out.push_back(!is_error(r.get()) && integer(r.get()) > 0);
  return out;
}

BatchStatus Queue::batch_status(const std::string& tenant, const std::string& batch_id) {
  require_tenant(tenant);
  require_job_id(batch_id);
  BatchStatus b;
  Reply r = impl_->conn.call({"HGETALL", Keys::batch(impl_->partition, tenant, batch_id)});
  for (std::size_t i = 0; i + 1 < size(r.get()); i += 2) {
    const std::string k = text(element(r.get(), i));
    const auto v = static_cast<std::uint64_t>(std::max<long long>(0, integer(element(r.get(), i + 1))));
    if (k == "submitted") b.submitted = v;
    else if (k == "completed") b.completed = v;
    else if (k == "expected") b.expected = v;
    else if (k.rfind("verdict:", 0) == 0) b.verdicts[k.substr(8)] = v;
    else if (k == "turns:groups") b.turns.groups = v;
    else if (k == "turns:solved_first") b.turns.solved_first_turn = v;
    else if (k == "turns:solved") b.turns.solved = v;
    else if (k == "turns:last") b.turns.last_turn = v;
  }
  Reply c = impl_->conn.call({"EXISTS", Keys::batch_cancel(impl_->partition, tenant, batch_id)});
  b.cancelled = integer(c.get()) > 0;
  return b;
}

void Queue::set_quota(const std::string& tenant, long long max_queued) {
  if (tenant != "*") require_tenant(tenant);
  if (max_queued < 0) impl_->conn.call({"HDEL", Keys::quotas(impl_->partition), tenant});
  else impl_->conn.call({"HSET", Keys::quotas(impl_->partition), tenant, std::to_string(max_queued)});
}

void Queue::set_cap(const std::string& tenant, long long max_running) {
  if (tenant != "*") require_tenant(tenant);
  if (max_running < 0) impl_->conn.call({"HDEL", Keys::caps(impl_->partition), tenant});
  else impl_->conn.call({"HSET", Keys::caps(impl_->partition), tenant, std::to_string(max_running)});
}

std::map<std::string, long long> Queue::caps() {
  Reply r = impl_->conn.call({"HGETALL", Keys::caps(impl_->partition)});
  std::map<std::string, long long> out;
  for (std::size_t i = 0; i + 1 < size(r.get()); i += 2) {
    try {
      out[text(element(r.get(), i))] = std::stoll(text(element(r.get(), i + 1)));
    } catch (const std::exception&) {  // not a number: no cap (kj_fetch reads it the same way)
    }
  }
  return out;
}

namespace {
std::string running_member(const EntryRef& e) { return std::to_string(e.lane) + ":" + e.entry_id; }
}  // namespace

void Queue::renew_running(const std::vector<EntryRef>& entries, milliseconds lease, bool add) {
  if (entries.empty()) return;
  const auto expiry = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()) + lease;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& e : entries) {
    require_tenant(e.tenant);
    std::vector<std::string> c = {"ZADD", Keys::running(impl_->partition, e.tenant)};
    if (!add) c.push_back("XX");
    c.push_back(std::to_string(expiry.count()));
    c.push_back(running_member(e));
    cmds.push_back(std::move(c));
  }
  impl_->conn.pipeline(cmds);
}

void Queue::release_running(const std::vector<EntryRef>& entries) {
  if (entries.empty()) return;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& e : entries) {
    require_tenant(e.tenant);
    cmds.push_back({"ZREM", Keys::running(impl_->partition, e.tenant), running_member(e)});
  }
  impl_->conn.pipeline(cmds);
}

std::uint64_t Queue::running_count(const std::string& tenant) {
  require_tenant(tenant);
  const auto now = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  Reply r = impl_->conn.call({"ZCOUNT", Keys::running(impl_->partition, tenant), "(" + std::to_string(now.count()), "+inf"});
  return static_cast<std::uint64_t>(std::max<long long>(0, integer(r.get())));
}

std::vector<DeadLetter> Queue::dead_letters(const std::string& tenant, std::size_t max) {
  require_tenant(tenant);
  Reply r = impl_->conn.call({"XRANGE", Keys::dead(impl_->partition, tenant), "-", "+", "COUNT", std::to_string(max)});
  std::vector<DeadLetter> out;
  for (std::size_t i = 0; i < size(r.get()); ++i) {
    const redisReply* e = element(r.get(), i);
    DeadLetter dl;
    dl.entry_id = text(element(e, 0));
    const redisReply* kv = element(e, 1);
    for (std::size_t k = 0; k + 1 < size(kv); k += 2) {
      const std::string f = text(element(kv, k));
      if (f == "id") dl.job_id = text(element(kv, k + 1));
      else if (f == "reason") dl.reason = text(element(kv, k + 1));
      else if (f == "batch") dl.batch_id = text(element(kv, k + 1));
    }
    out.push_back(std::move(dl));
  }
  return out;
}

std::string Queue::retry_dead(const std::string& tenant, const std::string& dead_entry_id) {
  require_tenant(tenant);
  const int p = impl_->partition;
  Reply e = impl_->conn.call({"XRANGE", Keys::dead(p, tenant), dead_entry_id, dead_entry_id}, true);
  if (is_error(e.get()) || size(e.get()) != 1) throw QueueError("no dead letter " + quoted(dead_entry_id) + " for " + tenant);
  std::string job_id, batch;
  const redisReply* kv = element(element(e.get(), 0), 1);
  for (std::size_t k = 0; k + 1 < size(kv); k += 2) {
    const std::string f = text(element(kv, k));
    if (f == "id") job_id = text(element(kv, k + 1));
    if (f == "batch") batch = text(element(kv, k + 1));
  }
  require_job_id(job_id);
  Reply r = impl_->fcall({"FCALL", "kj_dead_retry", "5", Keys::dead(p, tenant), Keys::jobs(p, tenant),
                          Keys::result(p, tenant, job_id), Keys::queued(p, tenant),
                          valid_job_id(batch) ? Keys::batch(p, tenant, batch) : "", dead_entry_id});
  return text(r.get());
}

namespace {
// Requests of one XREADGROUP / XAUTOCLAIM reply's entries on `stream` of (tenant, lane).
void add_requests(const redisReply* entries, const std::string& tenant, int lane, std::vector<BuildRequest>& out) {
  for (std::size_t e = 0; e < size(entries); ++e) {
    const redisReply* entry = element(entries, e);
    BuildRequest r{tenant, lane, text(element(entry, 0)), ""};
    const redisReply* kv = element(entry, 1);
    for (std::size_t i = 0; i + 1 < size(kv); i += 2)
      if (opt_text(element(kv, i)) == std::optional<std::string>("e")) r.entry = opt_text(element(kv, i + 1)).value_or("");
    out.push_back(std::move(r));
  }
}
}  // namespace

void Queue::announce_build_requests() {
  impl_->conn.call({"HSET", Keys::config(impl_->partition), "build_requests", "1"});
}

std::vector<BuildRequest> Queue::read_build_requests(const std::string& consumer, const std::vector<std::string>& tenants,
                                                     std::size_t count, milliseconds block, bool own_pending) {
  Impl& im = *impl_;
  std::vector<std::pair<std::string, int>> streams;  // (tenant, lane)
  std::vector<std::vector<std::string>> create;
  for (const auto& t : tenants) {
    if (!valid_tenant(t)) continue;
    for (int lane : kLanes) {
      streams.emplace_back(t, lane);
      if (!im.build_groups.count(t))
        create.push_back({"XGROUP", "CREATE", Keys::build_requests(im.partition, t, lane), Keys::kBuildGroup, "0", "MKSTREAM"});
    }
  }
  if (streams.empty() || count == 0) return {};
  if (!create.empty()) {
    im.conn.pipeline(create);  // BUSYGROUP: made already
    for (const auto& t : tenants) im.build_groups.insert(t);
  }
  std::vector<std::string> argv = {"XREADGROUP", "GROUP", Keys::kBuildGroup, consumer, "COUNT", std::to_string(count)};
  if (block.count() > 0 && !own_pending) argv.insert(argv.end(), {"BLOCK", std::to_string(block.count())});
  argv.push_back("STREAMS");
  for (const auto& [t, lane] : streams) argv.push_back(Keys::build_requests(im.partition, t, lane));
  for (std::size_t i = 0; i < streams.size(); ++i) argv.push_back(own_pending ? "0" : ">");
  Reply r = im.conn.call(argv, /*allow_error=*/false, own_pending ? milliseconds{0} : block);
  std::vector<BuildRequest> out;
  for (std::size_t s = 0; s < size(r.get()); ++s) {
    const redisReply* stream = element(r.get(), s);
    const std::string name = text(element(stream, 0));
    for (const auto& [t, lane] : streams)
      if (Keys::build_requests(im.partition, t, lane) == name) add_requests(element(stream, 1), t, lane, out);
  }
  return out;
}

std::vector<BuildRequest> Queue::claim_build_requests(const std::string& consumer, const std::vector<std::string>& tenants,
                                                      milliseconds min_idle, std::size_t max) {
  Impl& im = *impl_;
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::pair<std::string, int>> streams;
  for (const auto& t : tenants) {
    if (!valid_tenant(t) || !im.build_groups.count(t)) continue;
    for (int lane : kLanes) {
      streams.emplace_back(t, lane);
      cmds.push_back({"XAUTOCLAIM", Keys::build_requests(im.partition, t, lane), Keys::kBuildGroup, consumer,
                      std::to_string(min_idle.count()), "0-0", "COUNT", std::to_string(std::max<std::size_t>(max, 1))});
    }
  }
  auto replies = im.conn.pipeline(cmds);
  std::vector<BuildRequest> out;
  for (std::size_t i = 0; i < replies.size() && out.size() < max; ++i)
    if (!is_error(replies[i].get())) add_requests(element(replies[i].get(), 1), streams[i].first, streams[i].second, out);
  return out;
}

void Queue::ack_build_requests(const std::vector<BuildRequest>& done) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& r : done)
    cmds.push_back({"XACK", Keys::build_requests(impl_->partition, r.tenant, r.lane), Keys::kBuildGroup, r.id});
  if (!cmds.empty()) impl_->conn.pipeline(cmds);
}

std::vector<std::optional<Delivery>> Queue::job_entries(const std::vector<BuildRequest>& requests) {
  Impl& im = *impl_;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& r : requests) {
    const std::string id = r.entry.empty() ? "0-0" : r.entry;  // an XRANGE that finds nothing
    cmds.push_back({"XRANGE", Keys::jobs(im.partition, r.tenant, r.lane), id, id});
  }
  auto replies = im.conn.pipeline(cmds);
  std::vector<std::optional<Delivery>> out;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const redisReply* r = replies[i].get();
    if (is_error(r) || size(r) != 1 || requests[i].entry.empty()) out.emplace_back();
    else out.emplace_back(to_delivery(im.partition, requests[i].tenant, requests[i].lane, element(r, 0)));
  }
  return out;
}

std::size_t Queue::purge_dead(const std::string& tenant, const std::string& dead_entry_id) {
  require_tenant(tenant);
  const std::string key = Keys::dead(impl_->partition, tenant);
  if (dead_entry_id.empty()) {
    Reply n = impl_->conn.call({"XLEN", key});
    impl_->conn.call({"DEL", key});
    return static_cast<std::size_t>(integer(n.get()));
  }
  Reply r = impl_->conn.call({"XDEL", key, dead_entry_id});
  return static_cast<std::size_t>(integer(r.get()));
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
    std::map<std::string, std::pair<std::string, int>> stream_of;  // key -> (tenant, lane)
    for (const auto& t : im.tenants)
      for (int lane : kLanes) {
        argv.push_back(Keys::jobs(im.partition, t, lane));
        stream_of[argv.back()] = {t, lane};
      }
    argv.insert(argv.end(), stream_of.size(), ">");

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
      auto it = stream_of.find(key);
      if (it == stream_of.end()) throw QueueError("XREADGROUP returned an unknown stream " + quoted(key));
      const redisReply* entries = element(stream, 1);
      for (std::size_t e = 0; e < size(entries); ++e) {
        out.push_back(to_delivery(im.partition, it->second.first, it->second.second, element(entries, e)));
      }
    }
    return out;
  }
}

bool Queue::complete(const Delivery& delivery, const std::string& job_id, const std::string& result_bytes,
                     const std::string& verdict_name, std::chrono::seconds ttl, const CompleteOptions& options) {
  require_tenant(delivery.tenant);
  if (ttl.count() < 1) throw QueueError("complete: result ttl must be at least 1 s");
  // An entry without a usable job id still gets its (INVALID_JOB) result stored and acked; it
  // is filed under "#<entry id>", which no valid job id can collide with.
  const std::string id = valid_job_id(job_id) ? job_id : "#" + delivery.entry_id;
  const int p = delivery.partition;
  const bool batch = valid_job_id(delivery.batch_id);
  detail::StagedResult filed{verdict_name, options.dead_reason, batch ? options.group : "", options.turn, result_bytes};
  const std::string staged_key = Keys::staged(p, delivery.tenant, id);
  detail::Connection& conn = impl_->conn;
  if (conn.replica_acks() > 0) {
    // First staged wins, as the result itself does: a node that judged the job again after a
    // failover (or after its lease was taken) files what was staged first.
    Reply prior = conn.call({"SET", staged_key, detail::encode(filed), "NX", "GET", "EX", std::to_string(ttl.count())});
    if (auto text_prior = opt_text(prior.get())) {
      if (auto s = detail::decode_staged(*text_prior)) filed = std::move(*s);
    }
    conn.wait_replicas();  // Unavailable: nothing visible yet; the caller tries again
  }
  Reply r = impl_->fcall({"FCALL", "kj_complete", "7", Keys::result(p, delivery.tenant, id),
                          Keys::done(p, delivery.tenant), Keys::jobs(p, delivery.tenant, delivery.lane),
                          Keys::queued(p, delivery.tenant),
                          batch ? Keys::batch(p, delivery.tenant, delivery.batch_id) : "", Keys::dead(p, delivery.tenant),
                          filed.group.empty() ? "" : Keys::batch_groups(p, delivery.tenant, delivery.batch_id),
                          delivery.entry_id, id, filed.result, filed.verdict, std::to_string(ttl.count()),
                          batch ? delivery.batch_id : "", filed.dead_reason,
                          filed.dead_reason.empty() ? "" : delivery.payload.value_or(""), filed.group,
                          std::to_string(filed.turn)});
  const bool stored = integer(r.get()) == 1;
  if (conn.replica_acks() > 0) {
    try {
      conn.call({"DEL", staged_key});  // the result holds it now; a leftover only expires
    } catch (const QueueError&) {
    }
  }
  return stored;
}

std::optional<std::string> Queue::get_result(const std::string& tenant, const std::string& job_id) {
  require_tenant(tenant);
  require_job_id(job_id);
  return impl_->across_failover([&] {
    Reply r = impl_->conn.call({"GET", Keys::result(impl_->partition, tenant, job_id)});
    return opt_text(r.get());
  });
}

// No race: kj_complete stores the result and appends the event atomically. We note the last
// event id *before* looking at the result, so a completion that lands after the GET has an
// event after that id and XREAD sees it.
std::optional<std::string> Queue::wait_result(const std::string& tenant, const std::string& job_id,
                                              milliseconds timeout) {
  require_tenant(tenant);
  require_job_id(job_id);
  const auto deadline = Clock::now() + std::max(timeout, milliseconds{0});
  // After a failover, look again from the start on the new primary (its stream may end earlier).
  return impl_->across_failover([&] { return wait_result_until(tenant, job_id, deadline); });
}

std::optional<std::string> Queue::wait_result_until(const std::string& tenant, const std::string& job_id,
                                                    std::chrono::steady_clock::time_point deadline) {
  Impl& im = *impl_;
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

  // Per tenant: XLEN and XINFO GROUPS of each lane's stream, then XLEN of the done stream.
  constexpr std::size_t kLaneCount = std::size(kLanes);
  constexpr std::size_t kPer = 2 * kLaneCount + 1;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& t : tenants) {
    for (int lane : kLanes) {
      cmds.push_back({"XLEN", Keys::jobs(p, t, lane)});
      cmds.push_back({"XINFO", "GROUPS", Keys::jobs(p, t, lane)});  // errors when the stream is missing
    }
    cmds.push_back({"XLEN", Keys::done(p, t)});
  }
  auto replies = cmds.empty() ? std::vector<Reply>{} : im.conn.pipeline(cmds);
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    TenantStatus ts;
    ts.tenant = tenants[i];
    const std::size_t base = kPer * i;
    const redisReply* done = replies[base + kPer - 1].get();
    if (is_error(done)) throw QueueError("redis " + im.conn.url() + ": XLEN " + cmds[base + kPer - 1][1] + ": " + text(done));
    ts.completed = static_cast<std::uint64_t>(integer(done));
    for (std::size_t l = 0; l < kLaneCount; ++l) {
      const redisReply* xlen = replies[base + 2 * l].get();
      const redisReply* groups = replies[base + 2 * l + 1].get();
      if (is_error(xlen)) throw QueueError("redis " + im.conn.url() + ": XLEN " + cmds[base + 2 * l][1] + ": " + text(xlen));
      const auto queued = static_cast<std::uint64_t>(integer(xlen));
      std::uint64_t pending = 0, lag = queued;  // no group yet: nothing was ever delivered
      if (!is_error(groups)) {
        for (std::size_t g = 0; g < size(groups); ++g) {
          const redisReply* info = element(groups, g);
          std::map<std::string, const redisReply*> kv;
          for (std::size_t k = 0; k + 1 < size(info); k += 2) kv[text(element(info, k))] = element(info, k + 1);
          if (kv.count("name") == 0 || text(kv["name"]) != Keys::kGroup) continue;
          pending = kv.count("pending") ? static_cast<std::uint64_t>(integer(kv["pending"])) : 0;
          if (kv.count("lag") && !is_nil(kv["lag"])) {
            lag = static_cast<std::uint64_t>(integer(kv["lag"]));
          } else if (kv.count("last-delivered-id") && text(kv["last-delivered-id"]) != "0-0") {
            // Redis cannot tell (entries were deleted mid-stream): estimate from the length, which
            // is exact while the stream is trimmed below its oldest pending entry (design §8).
            lag = queued > pending ? queued - pending : 0;
          }
          break;
        }
      }
      ts.queued += queued;
      ts.pending += pending;
      ts.lag += lag;
    }
    out.tenants.push_back(std::move(ts));
  }

  out.nodes = nodes();
  return out;
}

std::vector<NodeStatus> Queue::nodes() {
  Impl& im = *impl_;
  std::vector<NodeStatus> out;
  // SCAN (never KEYS) over this partition's heartbeat keys.
  const std::string prefix = Keys::node(im.partition, "");
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
      out.push_back(std::move(ns));
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
