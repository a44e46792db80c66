// libkjqueue: the Redis Streams job queue (design §8). All multi-key writes are Redis 7
// server-side functions (queue/lua/kjudge.lua) so every client (C++, Python, redis-cli)
// gets the same atomic submit/complete.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kjqueue {

// Redis said no, or the connection broke. what() is human-readable.
struct QueueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Redis could not be reached, or is not the primary any more (a failover in progress): the same
// call may succeed once the connection has found the primary again (docs/operator-guide.md, "High
// availability"). Idempotent calls (submit, results) retry it themselves for Endpoint::failover_wait.
struct Unavailable : QueueError {
  using QueueError::QueueError;
};

// Address forms: "unix:///run/kjudge/redis.sock", "tcp://127.0.0.1:6379", "redis://host:port", and
// "redis+sentinel://[user[:pass]@]host:port[,host:port...]/<master-name>[/db]": the primary is the
// one the sentinels name, checked with ROLE after every connect and looked up again after any
// connection error or READONLY reply.
struct Endpoint {
  std::string url = "tcp://127.0.0.1:6379";
  std::string username;  // ACL user (later issue); empty = default user
  std::string password;
  std::chrono::milliseconds connect_timeout{2000};
  // Longest wait for one reply (blocking reads get their BLOCK time on top). After a timeout or
  // any I/O error the connection is dropped and the next call reconnects.
  std::chrono::milliseconds command_timeout{10000};
  // Replicas that must hold a submission (and a result before it is visible) before it counts
  // (WAIT): -1 = 1 for redis+sentinel URLs, 0 (no wait) otherwise.
  int replica_acks = -1;
  std::chrono::milliseconds replica_ack_timeout{2000};
  // How long a connect keeps asking the sentinels for a primary, and idempotent calls retry
  // Unavailable: -1 = 30 s for redis+sentinel URLs, 0 otherwise.
  std::chrono::milliseconds failover_wait{-1};
};

// Key names: every key carries the partition hash tag and, where it concerns one tenant, the
// tenant (design §8), so moving to Redis Cluster needs no migration.
struct Keys {
  static std::string tag(int partition);                          // "{p0}"
  static std::string tenants(int partition);                      // kj:{p0}:tenants (set)
  // The tenant's jobs stream of one priority lane: kj:{p0}:jobs:<tenant> (lane 0), with ":high"
  // (lane 1) or ":low" (lane -1) appended. Tenant names have no ':', so no tenant's key collides.
  static std::string jobs(int partition, const std::string& tenant, int lane = 0);
  static std::string job_marker(int partition, const std::string& tenant,
                                const std::string& job_id);        // kj:{p0}:job:<tenant>:<id> (idempotency)
  static std::string result(int partition, const std::string& tenant,
                            const std::string& job_id);            // kj:{p0}:result:<tenant>:<id>
  // A result written but not yet visible: held until a replica has it (Queue::complete with replica acks).
  static std::string staged(int partition, const std::string& tenant,
                            const std::string& job_id);            // kj:{p0}:staged:<tenant>:<id>
  static std::string done(int partition, const std::string& tenant);     // kj:{p0}:done:<tenant> (stream)
  static std::string node(int partition, const std::string& node);       // kj:{p0}:node:<node> (heartbeat)
  static std::string queued(int partition, const std::string& tenant);   // kj:{p0}:queued:<tenant> (jobs without a result)
  static std::string config(int partition);                              // kj:{p0}:config (hash: max_job_bytes, set by kjudged)
  static std::string quotas(int partition);                              // kj:{p0}:quotas (hash tenant|* -> max queued)
  static std::string batch(int partition, const std::string& tenant,
                           const std::string& batch_id);                 // kj:{p0}:batch:<tenant>:<batch> (hash)
  static std::string batch_groups(int partition, const std::string& tenant,
                                  const std::string& batch_id);          // kj:{p0}:bgroups:<tenant>:<batch> (hash: group -> lowest OK turn, -1)
  static std::string dead(int partition, const std::string& tenant);     // kj:{p0}:dead:<tenant> (stream)
  static std::string retry(int partition, const std::string& tenant);    // kj:{p0}:retry:<tenant> (hash: parked payloads)
  static std::string delayed(int partition, const std::string& tenant);  // kj:{p0}:delayed:<tenant> (zset: due ms)
  static std::string cancel(int partition, const std::string& tenant,
                            const std::string& job_id);                  // kj:{p0}:cancel:<tenant>:<id>
  static std::string batch_cancel(int partition, const std::string& tenant,
                                  const std::string& batch_id);          // kj:{p0}:bcancel:<tenant>:<batch>
  static std::string drain(int partition, const std::string& node);      // kj:{p0}:drain:<node> (admin drain request)
  static std::string gpu_clear(int partition, const std::string& node);  // kj:{p0}:gpuclear:<node> (admin: lift GPU quarantine)
  // The gateway's API tokens (kjudge admin token): hash sha256(token) hex -> tenant. Only admins
  // write it; kjudge-gateway reads it. The tokens themselves are never stored.
  static std::string tokens(int partition);                              // kj:{p0}:tokens
  static std::string caps(int partition);                                // kj:{p0}:caps (hash tenant|* -> max running, cluster-wide)
  static std::string running(int partition, const std::string& tenant);  // kj:{p0}:running:<tenant> (zset: admitted entries)
  // The shared build store (docs/operator-guide.md, *Build nodes*): only daemons read or write these.
  static std::string artifact(int partition, const std::string& key);     // kj:{p0}:art:<key> (string: sha256 hex + artifact)
  static std::string build_lease(int partition, const std::string& key);  // kj:{p0}:blease:<key> (string: owner, PX)
  static std::string building(int partition, const std::string& tenant);  // kj:{p0}:building:<tenant> (zset: leases -> expiry ms)
  static std::string builders(int partition);                             // kj:{p0}:builders (zset: build node -> expiry ms)
  // Build requests (docs/capacity-plan.md step 3): kj_submit adds {e: <entry id>} here for each job
  // while build nodes announced themselves (config build_requests = 1); build nodes read them
  // through their consumer group kBuildGroup. Lanes as jobs().
  static std::string build_requests(int partition, const std::string& tenant, int lane = 0);  // kj:{p0}:breq:<tenant>[:high|:low]
  static std::string archs(int partition);              // kj:{p0}:archs (hash: judging node -> "<expiry ms> <TORCH_CUDA_ARCH_LIST>")
  // The elected housekeeper (kj_housekeeper): "<owner> <token>" PX lease, and the token counter.
  static std::string housekeeper(int partition);        // kj:{p0}:housekeeper
  static std::string housekeeper_epoch(int partition);  // kj:{p0}:housekeeper:epoch
  static std::string reapable(int partition);           // kj:{p0}:reapable (hash: tenant -> 1, its entries idle past the lease; PX)
  static constexpr const char* kGroup = "kjudged";
  static constexpr const char* kBuildGroup = "kjbuild";
};

// Priority lanes, highest first. Job.priority > 0 runs in lane 1, < 0 in lane -1, 0 in lane 0;
// within a tenant the daemon serves the lane whose oldest waiting job has the best priority after
// aging (kj_fetch), so lower lanes never starve.
inline constexpr int kLanes[] = {1, 0, -1};
inline int lane_of_priority(long long priority) { return priority > 0 ? 1 : priority < 0 ? -1 : 0; }

// Names that end up inside keys: tenant [a-z0-9_-]{1,64}; job id [A-Za-z0-9._:-]{1,128}.
bool valid_tenant(const std::string& tenant);
bool valid_job_id(const std::string& job_id);

// The elected housekeeper's lease (kj_housekeeper) as a fence for its writes.
struct Fence {
  std::uint64_t token = 0;
};
// A fenced call made by a node that is no longer the housekeeper.
struct Fenced : QueueError {
  using QueueError::QueueError;
};

struct SubmitResult {
  std::string entry_id;  // stream entry id of the (first) submission
  bool duplicate = false;
};

// kj_submit refused the job: the tenant has `quota` jobs waiting for a result already.
struct QueueFull : QueueError {
  using QueueError::QueueError;
};

struct SubmitOptions {
  std::string batch_id;          // empty: no batch
  std::uint32_t batch_size = 0;  // >0: batch_done waits for this many completions
  int lane = 0;                  // lane_of_priority(job.priority)
};

// How a result is filed (see kj_complete).
struct CompleteOptions {
  std::string dead_reason;  // non-empty: also copy the job to the tenant's dead-letter stream
  std::string group;        // non-empty (a job of a batch that named its group): counted in the batch's turn tally
  std::uint32_t turn = 0;   // the job's repair turn (0: the first answer)
};

// One stream entry handed to this consumer. Any field may be missing or garbage: the daemon
// turns such entries into INVALID_JOB results, it never drops them.
struct Delivery {
  int partition = 0;
  std::string tenant;     // from the stream key, always known
  int lane = 0;           // the priority lane whose stream it came from
  std::string entry_id;
  std::string job_id;     // field "id"; empty when missing
  std::optional<std::string> payload;  // field "job": serialized kjudge.v1.Job bytes
  std::map<std::string, std::string> fields;  // every field as sent
  std::string batch_id;   // field "batch"
  std::uint32_t attempt = 0;     // field "attempt": deliveries before a retry re-queued it
  std::uint32_t deliveries = 1;  // times this entry was delivered (XPENDING), this one included
};

// A build request (Keys::build_requests): which job entry of which tenant lane wants a build.
struct BuildRequest {
  std::string tenant;
  int lane = 0;
  std::string id;     // the request's own entry id (acked with ack_build_requests)
  std::string entry;  // the job's entry id on Keys::jobs(tenant, lane); empty: a malformed request
};

// One entry of one tenant's lane stream.
struct EntryRef {
  std::string tenant;
  int lane = 0;
  std::string entry_id;
};

// Repair turns of a batch's jobs that named their group (kj_complete's tally): groups seen, those
// with an OK at turn 0, those with an OK at any turn, and the highest turn completed.
struct TurnTally {
  std::uint64_t groups = 0, solved_first_turn = 0, solved = 0, last_turn = 0;
};

struct BatchStatus {
  std::uint64_t submitted = 0, completed = 0, expected = 0;
  bool cancelled = false;
  std::map<std::string, std::uint64_t> verdicts;  // verdict name -> count
  TurnTally turns;
};

struct DeadLetter {
  std::string entry_id, job_id, reason, batch_id;
};

struct TenantStatus {
  std::string tenant;
  std::uint64_t queued = 0;    // XLEN of the jobs stream
  std::uint64_t pending = 0;   // delivered, not yet acked
  std::uint64_t lag = 0;       // entries never delivered to the group
  std::uint64_t completed = 0; // length of the completion stream
};

struct NodeStatus {
  std::string node;
  std::string info;  // JSON written by the node's heartbeat
  std::int64_t ttl_ms = 0;
};

struct QueueStatus {
  std::vector<TenantStatus> tenants;
  std::vector<NodeStatus> nodes;
};

// One connection to Redis. Not thread-safe: use one Queue per thread (the daemon gives the
// blocking fetch its own Queue, and each worker its own).
class Queue {
 public:
  explicit Queue(Endpoint endpoint, int partition = 0);
  ~Queue();
  Queue(Queue&&) noexcept;
  Queue& operator=(Queue&&) noexcept;

  int partition() const;

  // FUNCTION LOAD REPLACE of the kjudge library (idempotent; the daemon does it at start).
  void load_functions();

  // FCALL kj_submit: idempotent by job_id, registers the tenant, creates the group.
  // Throws QueueError on an invalid tenant or job id. (Any FCALL that finds the functions missing,
  // e.g. after a Redis restart without persistence, loads them once and retries.)
  SubmitResult submit(const std::string& tenant, const std::string& job_id, const std::string& payload);
  // With batch/quota bookkeeping (the daemon-era submit; the 3-argument one is the same with no batch).
  // Throws QueueFull when the tenant's quota is reached.
  SubmitResult submit(const std::string& tenant, const std::string& job_id, const std::string& payload,
                      const SubmitOptions& options);

  // Registered tenants with a usable stream (cached for a second; force re-reads).
  std::vector<std::string> tenants(bool force = false);

  // Up to `count` new entries from each listed tenant (FCALL kj_fetch, pipelined: one round trip).
  // Within a tenant each entry comes from the lane whose oldest waiting job scores best on
  // lane x aging + time waited. Tenants with nothing new contribute nothing.
  // cap_lease > 0: enforce the tenants' cluster caps (set_cap), admitted entries holding a running
  // member for that long.
  std::vector<Delivery> read_new(const std::string& consumer, const std::vector<std::pair<std::string, std::size_t>>& want,
                                 std::chrono::milliseconds aging = std::chrono::milliseconds(30'000),
                                 std::chrono::milliseconds cap_lease = std::chrono::milliseconds(0));

  // Blocking XREADGROUP COUNT 1 on the listed tenants' streams (up to `block`).
  std::vector<Delivery> read_blocking(const std::string& consumer, const std::vector<std::string>& tenants,
                                      std::chrono::milliseconds block);

  // The reaper: XAUTOCLAIM entries idle for at least min_idle from every tenant stream onto
  // `consumer` (at most `max` in all); their delivery counts come from XPENDING.
  std::vector<Delivery> reclaim(const std::string& consumer, std::chrono::milliseconds min_idle, std::size_t max);
  // The same on the listed tenants' streams only (those the housekeeper found idle entries in).
  std::vector<Delivery> reclaim(const std::string& consumer, std::chrono::milliseconds min_idle, std::size_t max,
                                const std::vector<std::string>& only);
  // Registered tenants with an entry pending for at least min_idle on one of their lanes (one
  // pipelined XPENDING IDLE per lane): the housekeeper's scan for the reaper.
  std::vector<std::string> idle_tenants(std::chrono::milliseconds min_idle);

  // Lease heartbeat (kj_lease renew) / hand-back (kj_lease handback) of entries pending on
  // `consumer` in one tenant's stream. Returns the entries that were not ours any more.
  std::vector<std::string> renew(const std::string& tenant, const std::string& consumer,
                                 const std::vector<std::string>& entry_ids, std::chrono::milliseconds lease,
                                 int lane = 0);
  std::vector<std::string> hand_back(const std::string& tenant, const std::string& consumer,
                                     const std::vector<std::string>& entry_ids, std::chrono::milliseconds lease,
                                     int lane = 0);
  // Entries of one lane not yet acknowledged by the kjudged group, oldest first, at most `max`:
  // from the group's oldest pending entry (or after its last delivered one). Build nodes look for
  // work here without consuming it (they read no group).
  std::vector<Delivery> unfinished(const std::string& tenant, int lane, std::size_t max);

  // Build nodes (docs/capacity-plan.md step 3). announce: kj_submit writes build requests from now on.
  // read_build_requests: XREADGROUP (group kBuildGroup) over the listed tenants' request streams,
  // up to `count` each (own_pending: this consumer's unacked ones, after a restart); the groups of
  // tenants not seen before are created first. Blocks up to `block` when nothing is there.
  void announce_build_requests();
  std::vector<BuildRequest> read_build_requests(const std::string& consumer, const std::vector<std::string>& tenants,
                                                std::size_t count, std::chrono::milliseconds block, bool own_pending);
  // Requests left idle for min_idle on another consumer (a dead build node's) come to `consumer`.
  std::vector<BuildRequest> claim_build_requests(const std::string& consumer, const std::vector<std::string>& tenants,
                                                 std::chrono::milliseconds min_idle, std::size_t max);
  void ack_build_requests(const std::vector<BuildRequest>& done);
  // The job entries the requests name, in order (nullopt: gone, i.e. trimmed after its result). One round trip.
  std::vector<std::optional<Delivery>> job_entries(const std::vector<BuildRequest>& requests);

  // Every entry pending on `consumer` (any tenant, any lane): a restarted daemon hands back its
  // previous incarnation's entries.
  std::vector<EntryRef> pending_of(const std::string& consumer);

  // Cluster-wide per-tenant concurrency caps (kj:{pN}:caps, "*" = default; negative removes).
  // read_new admits a capped tenant's entries only while fewer than the cap are running on all
  // nodes; each admitted entry holds a member of the tenant's running set until release_running
  // (or until its lease expiry passes without a renew_running: its node died).
  void set_cap(const std::string& tenant_or_star, long long max_running);
  std::map<std::string, long long> caps();  // tenant|* -> cap
  // Members of admitted (or reclaimed, add = true) entries get expiry now + lease; renewing
  // (add = false) touches existing members only.
  void renew_running(const std::vector<EntryRef>& entries, std::chrono::milliseconds lease, bool add = false);
  void release_running(const std::vector<EntryRef>& entries);
  std::uint64_t running_count(const std::string& tenant);  // live members (not expired)

  // Infrastructure failure: park the job until `due`, then kj_promote re-queues it with `attempt`.
  bool retry_later(const Delivery& delivery, const std::string& job_id, std::uint32_t attempt,
                   std::chrono::system_clock::time_point due);
  // kj_promote on every tenant; returns jobs moved back onto streams.
  std::size_t promote_due();
  // kj_trim on every tenant stream (MINID below the oldest pending entry); returns entries removed.
  std::size_t trim();
  // The same, fenced: refused (Fenced thrown) unless `fence` is the elected housekeeper's token.
  std::size_t promote_due(const Fence& fence);
  std::size_t trim(const Fence& fence);

  // Cancel markers (kj_cancel) and the check the daemon makes before and while running a job.
  void cancel_job(const std::string& tenant, const std::string& job_id, std::chrono::seconds ttl);
  void cancel_batch(const std::string& tenant, const std::string& batch_id, std::chrono::seconds ttl);
  // One entry per query (tenant, job_id, batch_id): true when the job or its batch is cancelled.
  std::vector<bool> cancelled(const std::vector<std::tuple<std::string, std::string, std::string>>& jobs);

  BatchStatus batch_status(const std::string& tenant, const std::string& batch_id);

  // Admission: max jobs waiting for a result per tenant ("*" = default); negative removes.
  void set_quota(const std::string& tenant_or_star, long long max_queued);

  std::vector<DeadLetter> dead_letters(const std::string& tenant, std::size_t max);
  std::string retry_dead(const std::string& tenant, const std::string& dead_entry_id);  // -> new entry id
  std::size_t purge_dead(const std::string& tenant, const std::string& dead_entry_id);  // "" = all

  // XREADGROUP over every registered tenant's stream; blocks up to `block` when nothing is there
  // (block <= 0: do not block). `max` is XREADGROUP's COUNT, which applies per tenant stream, so
  // one call can return up to max x tenants deliveries (all of them pending on `consumer`).
  std::vector<Delivery> fetch(const std::string& consumer, std::size_t max, std::chrono::milliseconds block);

  // FCALL kj_complete: store the result (first one wins, TTL), emit the completion event on the
  // tenant's done stream, then XACK. Returns false when a result already existed (still acks).
  // With replica acks (Endpoint::replica_acks) the result is first staged (first one wins too) and
  // made visible only once a replica holds it: a job judged again after a failover files the
  // staged result, never a second verdict; Unavailable when no replica took it in time.
  // A job_id that is not valid_job_id (a malformed entry) files the result under "#<entry id>".
  // Throws QueueError on a connection error: the entry then stays pending (redelivered later).
  bool complete(const Delivery& delivery, const std::string& job_id, const std::string& result_bytes,
                const std::string& verdict_name, std::chrono::seconds ttl, const CompleteOptions& options = {});

  std::optional<std::string> get_result(const std::string& tenant, const std::string& job_id);

  // Blocks on the tenant's completion stream until job_id's result exists or the timeout passes.
  std::optional<std::string> wait_result(const std::string& tenant, const std::string& job_id,
                                         std::chrono::milliseconds timeout);

  // SET kj:{pN}:node:<node> info EX ttl. node: [A-Za-z0-9._:-]{1,128}, else QueueError.
  void heartbeat(const std::string& node, const std::string& info_json, std::chrono::seconds ttl);
  // Per registered tenant: stream length, pending, lag, completions; live nodes (SCAN, not KEYS).
  // Throws QueueError naming the key when a tenant's key is not a stream.
  QueueStatus status();
  // The live nodes of this partition and their heartbeats.
  std::vector<NodeStatus> nodes();

  // Raw command for tools and tests (argv form, binary-safe). Returns the reply as text/array
  // rendered to a string vector; integers as decimal text; nil as empty optional.
  std::vector<std::optional<std::string>> command(const std::vector<std::string>& argv);

 private:
  std::optional<std::string> wait_result_until(const std::string& tenant, const std::string& job_id,
                                               std::chrono::steady_clock::time_point deadline);
  std::size_t promote_due_impl(const Fence* fence);
  std::size_t trim_impl(const Fence* fence);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kjqueue
