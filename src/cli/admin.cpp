#include "cli/admin.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "common/batch_json.h"
#include "gateway/tokens.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/verdict.pb.h"

namespace kj::cli {
using kjqueue::Keys;
using nlohmann::json;

namespace {

// A Redis 7 ACL selector: these commands on these keys only (root permissions are separate).
std::string selector(const std::vector<std::string>& keys, const std::vector<std::string>& commands) {
  std::string out = "(";
  for (const auto& k : keys) out += "~" + k + " ";
  for (const auto& c : commands) out += "+" + c + " ";
  out.back() = ')';
  return out;
}

}  // namespace

namespace {

// The ACL of a user that submits for the tenants `tenant` matches (one name, or "*" for the gateway).
std::vector<std::string> submitter_acl(const std::string& user, const std::string& tenant, const std::string& password,
                                       int p) {
  if (password.empty()) throw kjqueue::QueueError("a Redis user needs a password (--password)");
  const std::vector<std::string> streams = tenant == "*" ? std::vector<std::string>{Keys::jobs(p, tenant, 0)}
                                                         : std::vector<std::string>{Keys::jobs(p, tenant, 1), Keys::jobs(p, tenant, 0),
                                                                                    Keys::jobs(p, tenant, -1)};
  const std::vector<std::string> markers = {Keys::job_marker(p, tenant, "*"), Keys::cancel(p, tenant, "*"),
                                            Keys::batch_cancel(p, tenant, "*")};
  std::vector<std::string> acl = {"ACL", "SETUSER", user, "reset", "on", ">" + password, "resetchannels",
                                  // connect and read
                                  "-@all", "+ping", "+hello", "+auth", "+client|setname", "+function|list", "+get",
                                  "+mget", "+exists", "+xrevrange", "+xrange", "+xread", "+xlen", "+hgetall", "+hget",
                                  "+sismember"};
  std::vector<std::string> readable = {Keys::tenants(p), Keys::quotas(p), Keys::config(p), Keys::result(p, tenant, "*"),
                                       Keys::done(p, tenant), Keys::dead(p, tenant), Keys::queued(p, tenant),
                                       Keys::batch(p, tenant, "*")};
  readable.insert(readable.end(), streams.begin(), streams.end());
  readable.insert(readable.end(), markers.begin(), markers.end());
  for (const auto& k : readable) acl.push_back("%R~" + k);
  // FCALL needs write access to every key in KEYS: those of kj_submit and kj_cancel
  std::vector<std::string> fcall_keys = streams;
  fcall_keys.insert(fcall_keys.end(), markers.begin(), markers.end());
  fcall_keys.push_back(Keys::queued(p, tenant));
  fcall_keys.push_back(Keys::batch(p, tenant, "*"));
  acl.push_back(selector(fcall_keys, {"fcall", "fcall_ro"}));
  // the writes those two functions make, each on its own keys (kj_submit adds build requests too)
  acl.push_back(selector(streams, {"xadd", "xgroup|create"}));
  const std::vector<std::string> requests =
      tenant == "*" ? std::vector<std::string>{Keys::build_requests(p, tenant, 0)}
                    : std::vector<std::string>{Keys::build_requests(p, tenant, 1), Keys::build_requests(p, tenant, 0),
                                               Keys::build_requests(p, tenant, -1)};
  acl.push_back(selector(requests, {"xadd"}));
  acl.push_back(selector(markers, {"set"}));
  acl.push_back(selector({Keys::queued(p, tenant)}, {"incr"}));
  acl.push_back(selector({Keys::batch(p, tenant, "*")}, {"hincrby", "hset", "expire"}));
  return acl;
}

}  // namespace

// Redis runs a function's commands under the caller's ACL, so a tenant user holds exactly the
// (command, key) pairs kj_submit and kj_cancel use, as selectors; whatever it does with them directly
// stays within its own keys and cannot lower its queued counter (INCR only) or touch a shared key.
// Everything else it reads. The kjudged-only functions refuse it (daemon_only in kjudge.lua).
std::vector<std::string> tenant_acl(const std::string& tenant, const std::string& password, int p) {
  if (!kjqueue::valid_tenant(tenant)) throw kjqueue::QueueError("invalid tenant '" + tenant + "'");
  return submitter_acl("kj-" + tenant, tenant, password, p);
}

// The gateway: a tenant user's rights over every tenant's keys, the token hash to read and the tenant
// set to register new tenants in. It cannot XACK, so kjudged's functions refuse it too.
std::vector<std::string> gateway_acl(const std::string& password, int p) {
  auto acl = submitter_acl("kj-gateway", "*", password, p);
  acl.push_back("%R~" + Keys::tokens(p));
  acl.push_back(selector({Keys::tenants(p)}, {"sadd"}));
  return acl;
}

std::string acl_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool quote = a.find_first_of(" {}\"'") != std::string::npos;
    out += quote ? "'" + a + "'" : a;
  }
  return out;
}

int admin_queues(kjqueue::Queue& q, bool as_json) {
  const auto st = q.status();
  json j = json::array();
  for (const auto& t : st.tenants) {
    const auto queued = q.command({"GET", Keys::queued(q.partition(), t.tenant)});
    const auto dead = q.command({"XLEN", Keys::dead(q.partition(), t.tenant)});
    const auto delayed = q.command({"ZCARD", Keys::delayed(q.partition(), t.tenant)});
    j.push_back({{"tenant", t.tenant}, {"lag", t.lag}, {"pending", t.pending}, {"stream_length", t.queued},
                 {"waiting_for_result", queued.empty() || !queued[0] ? 0 : std::stoll(*queued[0])},
                 {"retry_parked", delayed.empty() || !delayed[0] ? 0 : std::stoll(*delayed[0])},
                 {"dead_letters", dead.empty() || !dead[0] ? 0 : std::stoll(*dead[0])}, {"completed_events", t.completed},
                 {"running_under_cap", q.running_count(t.tenant)}});
  }
  if (as_json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%-24s %8s %8s %10s %8s %8s\n", "tenant", "lag", "pending", "no-result", "parked", "dead");
  for (const auto& t : j)
    std::printf("%-24s %8lld %8lld %10lld %8lld %8lld\n", t["tenant"].get<std::string>().c_str(), t["lag"].get<long long>(),
                t["pending"].get<long long>(), t["waiting_for_result"].get<long long>(), t["retry_parked"].get<long long>(),
                t["dead_letters"].get<long long>());
  return 0;
}

int admin_job(kjqueue::Queue& q, const std::string& tenant, const std::string& job_id, bool as_json) {
  const int p = q.partition();
  json j = {{"tenant", tenant}, {"job_id", job_id}};
  auto marker = q.command({"GET", Keys::job_marker(p, tenant, job_id)});
  const std::string entry = !marker.empty() && marker[0] ? *marker[0] : "";
  j["entry_id"] = entry;
  j["state"] = entry.empty() ? "unknown" : "queued";
  if (!entry.empty()) {
    for (int lane : kjqueue::kLanes) {  // the marker names the entry, not its priority lane
      std::vector<std::optional<std::string>> pend;
      try {
        pend = q.command({"XPENDING", Keys::jobs(p, tenant, lane), Keys::kGroup, entry, entry, "1"});
      } catch (const kjqueue::QueueError&) {  // NOGROUP: that lane was never used
        continue;
      }
      if (pend.size() >= 4) {
        j["state"] = "running";
        j["lane"] = lane;
        j["consumer"] = pend[1].value_or("");
        j["idle_ms"] = std::stoll(pend[2].value_or("0"));
        j["deliveries"] = std::stoll(pend[3].value_or("0"));
        break;
      }
    }
  }
  auto parked = q.command({"ZSCORE", Keys::delayed(p, tenant), job_id});
  if (!parked.empty() && parked[0]) {
    j["state"] = "retry_parked";
    j["retry_at_ms"] = std::stoll(*parked[0]);
  }
  auto cancel = q.command({"EXISTS", Keys::cancel(p, tenant, job_id)});
  j["cancel_requested"] = !cancel.empty() && cancel[0] == "1";
  if (auto r = q.get_result(tenant, job_id)) {
    kjudge::v1::Result res;
    if (res.ParseFromString(*r)) {
      j["state"] = "done";
      j["verdict"] = kjudge::v1::Verdict_Name(res.status());
      j["message"] = res.message();
      j["worker"] = res.worker();
      j["attempt"] = res.attempt();
    }
  }
  if (as_json) std::cout << j.dump(2) << "\n";
  else
    for (auto& [k, v] : j.items()) std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  return j["state"] == "unknown" ? 2 : 0;
}

int admin_nodes(kjqueue::Queue& q, bool as_json) {
  const auto st = q.status();
  json j = json::array();
  for (const auto& n : st.nodes) {
    auto drain = q.command({"EXISTS", Keys::drain(q.partition(), n.node)});
    j.push_back({{"node", n.node}, {"ttl_ms", n.ttl_ms}, {"info", json::parse(n.info, nullptr, false)},
                 {"drain_requested", !drain.empty() && drain[0] == "1"}});
  }
  if (as_json) std::cout << j.dump(2) << "\n";
  else
    for (auto& n : j) std::cout << n["node"].get<std::string>() << " " << n["info"].dump() << (n["drain_requested"].get<bool>() ? " (draining)" : "") << "\n";
  return 0;
}

int admin_drain(kjqueue::Queue& q, const std::string& node, bool undo) {
  if (undo) q.command({"DEL", Keys::drain(q.partition(), node)});
  else q.command({"SET", Keys::drain(q.partition(), node), "1", "EX", "86400"});
  std::cout << (undo ? "drain request removed for " : "drain requested for ") << node
            << (undo ? "\n" : " (it stops fetching at its next heartbeat, hands back unstarted jobs, finishes running ones and exits)\n");
  return 0;
}

int admin_dead(kjqueue::Queue& q, const std::string& tenant, const std::string& action, const std::string& entry, bool as_json) {
  if (action == "list") {
    json j = json::array();
    for (const auto& d : q.dead_letters(tenant, 1000))
      j.push_back({{"entry", d.entry_id}, {"job_id", d.job_id}, {"batch", d.batch_id}, {"reason", d.reason}});
    if (as_json) std::cout << j.dump(2) << "\n";
    else
      for (auto& d : j)
        std::cout << d["entry"].get<std::string>() << " " << d["job_id"].get<std::string>() << ": " << d["reason"].get<std::string>() << "\n";
    return 0;
  }
  if (action == "retry") {
    std::vector<std::string> entries;
    if (entry.empty())
      for (const auto& d : q.dead_letters(tenant, 100000)) entries.push_back(d.entry_id);
    else entries.push_back(entry);
    for (const auto& e : entries) std::cout << e << " -> " << q.retry_dead(tenant, e) << "\n";
    return 0;
  }
  if (action == "purge") {
    std::cout << "purged " << q.purge_dead(tenant, entry) << " dead letters\n";
    return 0;
  }
  std::cerr << "kjudge: admin dead wants list|retry|purge\n";
  return 2;
}

int admin_quota(kjqueue::Queue& q, const std::string& tenant, long long max_queued) {
  q.set_quota(tenant, max_queued);
  std::cout << (max_queued < 0 ? "quota removed for " + tenant : "quota for " + tenant + ": " + std::to_string(max_queued)) << "\n";
  return 0;
}

int admin_cap(kjqueue::Queue& q, const std::string& tenant, long long max_running) {
  q.set_cap(tenant, max_running);
  std::cout << (max_running < 0 ? "cluster cap removed for " + tenant
                                : "cluster cap for " + tenant + ": " + std::to_string(max_running) + " running")
            << "\n";
  return 0;
}

// Redis's `default` user is what a connection without credentials is: left on with nopass (Redis's own
// default), it bypasses every tenant user. Not changed here (kjudged or an operator may be using it).
void warn_if_default_user_open(kjqueue::Queue& q) {
  for (const auto& line : q.command({"ACL", "LIST"}))
    if (line && line->starts_with("user default on ") && line->find(" nopass") != std::string::npos)
      std::cerr << "warning: Redis's default user is on without a password: a client that connects without "
                   "credentials bypasses every tenant ACL. Give kjudged and operators their own users, then run "
                   "ACL SETUSER default off (docs/operator-guide.md, Tenant ACL users)\n";
}

int admin_acl(kjqueue::Queue* q, const std::string& tenant, const std::string& password, int partition, bool apply) {
  auto argv = tenant_acl(tenant, password, partition);
  std::cout << acl_line(argv) << "\n";
  if (apply && q) {
    q->command(argv);
    // Registered here, so kj_submit never needs write access to the shared tenant set.
    q->command({"SADD", Keys::tenants(partition), tenant});
    for (int lane : kjqueue::kLanes) {
      try {
        q->command({"XGROUP", "CREATE", Keys::jobs(partition, tenant, lane), Keys::kGroup, "0", "MKSTREAM"});
      } catch (const kjqueue::QueueError& e) {
        if (std::string(e.what()).find("BUSYGROUP") == std::string::npos) throw;  // else: exists already
      }
    }
    warn_if_default_user_open(*q);
  }
  return 0;
}

int admin_token(kjqueue::Queue& q, const std::string& action, const std::string& tenant, bool as_json) {
  if (action == "list") {
    const auto counts = gateway::token_counts(q);
    if (as_json) std::cout << json(counts).dump(2) << "\n";
    else
      for (const auto& [t, n] : counts) std::cout << t << ": " << n << " token" << (n == 1 ? "" : "s") << "\n";
    return 0;
  }
  if (action == "revoke") {
    std::cout << "revoked " << gateway::revoke_tokens(q, tenant) << " tokens of " << tenant
              << " (the gateways stop taking them at their next refresh)\n";
    return 0;
  }
  const std::string token = action == "rotate" ? gateway::rotate_token(q, tenant) : gateway::create_token(q, tenant);
  if (as_json) std::cout << json{{"tenant", tenant}, {"token", token}}.dump() << "\n";
  else std::cout << token << "\n";
  return 0;
}

int admin_gateway_acl(kjqueue::Queue* q, const std::string& password, int partition, bool apply) {
  const auto argv = gateway_acl(password, partition);
  std::cout << acl_line(argv) << "\n";
  if (apply && q) {
    q->command(argv);
    warn_if_default_user_open(*q);
  }
  return 0;
}

// "; turns: 4 groups, solved at turn 0: 1 (25.0%), by turn 2: 3 (75.0%)", or nothing when no job
// of the batch named its group
static std::string turns_line(const kjqueue::TurnTally& t) {
  if (t.groups == 0) return "";
  const auto pct = [&](std::uint64_t n) { return fmt::format("{} ({:.1f}%)", n, 100.0 * double(n) / double(t.groups)); };
  return fmt::format("; turns: {} groups, solved at turn 0: {}, by turn {}: {}", t.groups, pct(t.solved_first_turn),
                     t.last_turn, pct(t.solved));
}

int print_batch_status(const std::string& tenant, const std::string& batch, const kjqueue::BatchStatus& b, bool as_json) {
  json j = batch_json(b);
  j["tenant"] = tenant;
  j["batch"] = batch;
  if (as_json) std::cout << j.dump(2) << "\n";
  else
    std::cout << batch << ": " << b.completed << "/" << b.submitted << " done" << (b.cancelled ? " (cancelled)" : "") << " "
              << json(b.verdicts).dump() << turns_line(b.turns) << "\n";
  return 0;
}

int batch_status(kjqueue::Queue& q, const std::string& tenant, const std::string& batch, bool as_json) {
  const auto b = q.batch_status(tenant, batch);
  if (b.submitted == 0 && b.expected == 0 && !b.cancelled) {
    std::cerr << "kjudge: batch '" << batch << "' not found for tenant '" << tenant
              << "' (submitted under another --tenant?)\n";
    return 3;
  }
  return print_batch_status(tenant, batch, b, as_json);
}

}  // namespace kj::cli
