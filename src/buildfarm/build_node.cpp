#include "buildfarm/build_node.h"

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "common/prometheus_text.h"
#include "common/redis_endpoint.h"
#include "kjsandbox/policy.h"
#include "pipeline/kernelbench/prebuild.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/run/workspace.h"

namespace kj::buildfarm {
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

unsigned node_cap(const QueueConfig& q, const std::string& t) {
  if (auto it = q.tenants.find(t); it != q.tenants.end()) return it->second.max_running;
  if (auto it = q.tenants.find("*"); it != q.tenants.end()) return it->second.max_running;
  return 0;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// Waits up to `wait` for SIGTERM/SIGINT (true) while the loop idles; SIGHUP is ignored here.
std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool stop_signal_within(std::chrono::milliseconds wait) {
  const sigset_t set = stop_signals();
  timespec ts{0, static_cast<long>(wait.count()) * 1'000'000L};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig == SIGTERM || sig == SIGINT;
}

}  // namespace

BuildNode::Running::Running() : cancel_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
BuildNode::Running::~Running() {
  if (cancel_fd >= 0) ::close(cancel_fd);
}

BuildNode::BuildNode(Config cfg) : cfg_(std::move(cfg)), store_(cfg_, RedisBuildStore::Role::Build) {}

BuildNode::~BuildNode() {
  for (auto& t : threads_)
    if (t.t.joinable()) t.t.join();
}

int BuildNode::run() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // build threads inherit the mask; the loop takes them
  prepare_state_dir(cfg_.state_dir);
  std::string cg_log;
  log::info("sandbox.cgroups_cleaned", {{"removed", kjsandbox::cleanup_stale_cgroups(&cg_log)}, {"detail", cg_log}});
  kjqueue::Queue q(redis_endpoint(cfg_.redis), cfg_.redis.partition);
  q.load_functions();
  q.command({"DEL", kjqueue::Keys::drain(cfg_.redis.partition, cfg_.node)});
  q.announce_build_requests();  // kj_submit writes build requests from now on
  if (sd_watchdog_enabled(0, &watchdog_usec_) <= 0) watchdog_usec_ = 0;
  log::info("daemon.started", {{"node", cfg_.node}, {"role", "build"}, {"workers", cfg_.workers},
                               {"redis", cfg_.redis.url}, {"lease_ms", cfg_.build.lease.count()}});
  boost::asio::io_context ioc;  // the HTTP endpoint's own thread (it inherits the blocked signals)
  std::unique_ptr<HttpServer> server;
  std::thread http_thread;
  if (cfg_.metrics.port) {
    server = std::make_unique<HttpServer>(ioc, cfg_.metrics.address, cfg_.metrics.port,
                                          [this](const std::string& target) { return http(target); });
    log::info("metrics.listening", {{"address", cfg_.metrics.address}, {"port", server->port()}});
    http_thread = std::thread([&ioc] { ioc.run(); });
  }
  sd_notify(0, "READY=1\nSTATUS=building");
  while (!drain_requested_ && !stop_signal_within(200ms)) {
    try {
      tick(q);
      redis_ok_ = true;
      loop_tick_ms_ = steady_ms();
    } catch (const std::exception& e) {
      redis_ok_ = false;
      log::error("build.loop_failed", {{"error", e.what()}});
      q = kjqueue::Queue(redis_endpoint(cfg_.redis), cfg_.redis.partition);
      std::this_thread::sleep_for(500ms);
    }
  }
  draining_ = true;
  sd_notify(0, "STOPPING=1\nSTATUS=draining");
  drain();
  if (server) {
    server->close();
    ioc.stop();
    http_thread.join();
  }
  return 0;
}

HttpReply BuildNode::http(const std::string& target) {
  if (target == "/livez")
    return steady_ms() - loop_tick_ms_ < 30'000 || draining_ ? HttpReply{200, "ok\n"} : HttpReply{503, "build loop stuck\n"};
  if (target == "/readyz") {
    if (draining_) return {503, "draining\n"};
    if (!redis_ok_) return {503, "redis not reachable\n"};
    return {200, "ready\n"};
  }
  if (target != "/metrics") return {404, "not found: /metrics, /livez, /readyz\n"};
  std::size_t running;
  {
    std::lock_guard lk(mu_);
    running = running_.size();
  }
  std::string out;
  append_metric(out, "gauge", "kjudge_ready", "1 when the node takes build work.", redis_ok_ && !draining_ ? 1 : 0);
  append_metric(out, "gauge", "kjudge_build_slots", "Builds this node runs at once.", cfg_.workers);
  append_metric(out, "gauge", "kjudge_builds_running", "Builds running on this node now.", running);
  append_metric(out, "counter", "kjudge_builds_done_total", "Builds this node finished (made or failed).",
                builds_done_.load());
  return {200, out + store_.render_metrics()};
}

void BuildNode::tick(kjqueue::Queue& q) {
  const auto now = Clock::now();
  if (now >= next_heartbeat_) {
    heartbeat(q);
    next_heartbeat_ = now + std::min({std::chrono::milliseconds(cfg_.heartbeat_ttl) / 3, cfg_.build.builder_ttl / 3,
                                      std::chrono::milliseconds(2s)});
  }
  if (now >= next_renew_) {
    store_.renew_held();
    next_renew_ = now + cfg_.build.lease / 3;
  }
  if (now >= next_cancel_poll_) {
    poll_cancels(q);
    next_cancel_poll_ = now + cfg_.queue.cancel_poll;
  }
  if (watchdog_usec_ && now >= next_watchdog_) {  // the loop turns: tick() is only called from it
    sd_notify(0, "WATCHDOG=1");
    next_watchdog_ = now + std::chrono::microseconds(watchdog_usec_ / 2);
  }
  reap_threads();
  settle(q);
  // With slots free, a turn that started nothing reads again after half a second at the earliest;
  // a build that ends frees a slot, looked at on the next turn.
  if (now >= next_scan_ && free_slots() > 0 && dispatch(q) == 0) next_scan_ = now + 500ms;
}

void BuildNode::heartbeat(kjqueue::Queue& q) {
  std::size_t busy;
  {
    std::lock_guard lk(mu_);
    busy = running_.size();
  }
  const nlohmann::json info = {{"version", KJUDGE_VERSION}, {"role", "build"}, {"workers", cfg_.workers},
                               {"busy", busy}, {"builds_done", builds_done_.load()}, {"pid", ::getpid()}};
  q.heartbeat(cfg_.node, info.dump(), cfg_.heartbeat_ttl);
  store_.announce_builder(cfg_.build.builder_ttl);
  q.announce_build_requests();  // again: a Redis that restarted empty forgot it
  adopt_cuda_archs(q);
  const auto drain = q.command({"EXISTS", kjqueue::Keys::drain(cfg_.redis.partition, cfg_.node)});
  drain_requested_ = !drain.empty() && drain.front() == "1";
}

// No GPU here to ask: CUDA builds target what the judging nodes say their builds target, so the
// keys match theirs (a build for another architecture would never be taken).
void BuildNode::adopt_cuda_archs(kjqueue::Queue& q) {
  std::map<std::string, std::string> published;  // one small hash, not every node's heartbeat
  const auto all = q.command({"HGETALL", kjqueue::Keys::archs(cfg_.redis.partition)});
  for (std::size_t i = 0; i + 1 < all.size(); i += 2)
    if (all[i] && all[i + 1]) published[*all[i]] = *all[i + 1];
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  auto archs = cuda_arch_lists_to_build(cfg_, published, now);
  if (archs == cuda_archs_) return;
  cuda_archs_ = std::move(archs);
  log::info("build.cuda_archs", {{"cuda_arch_lists", cuda_archs_},
                                 {"from", cfg_.kernelbench.cuda_arch_list.empty() ? "judging nodes" : "config"}});
}

std::vector<BuildNode::RunningPtr> BuildNode::running() {
  std::lock_guard lk(mu_);
  std::vector<RunningPtr> out;
  for (auto& [k, r] : running_) out.push_back(r);
  return out;
}

// A cancelled job's build is killed at once (its sandbox watches the eventfd); nothing is published.
void BuildNode::poll_cancels(kjqueue::Queue& q) {
  auto items = running();
  if (items.empty()) return;
  std::vector<std::tuple<std::string, std::string, std::string>> ask;
  for (auto& r : items) ask.emplace_back(r->work.job.tenant(), r->work.job.job_id(), r->work.job.batch_id());
  const auto flags = q.cancelled(ask);
  for (std::size_t i = 0; i < flags.size() && i < items.size(); ++i) {
    if (!flags[i] || items[i]->cancelled) continue;
    items[i]->cancelled = true;
    const std::uint64_t one = 1;
    (void)!::write(items[i]->cancel_fd, &one, sizeof one);
    log::info("build.cancel_requested", {{"job_id", items[i]->work.job.job_id()}, {"key", items[i]->work.key}});
  }
}

bool BuildNode::under_cap(const std::string& tenant) {
  const unsigned cap = node_cap(cfg_.queue, tenant);
  return cap == 0 || per_tenant_[tenant] < cap;
}

std::size_t BuildNode::free_slots() {
  std::lock_guard lk(mu_);
  return cfg_.workers > running_.size() ? cfg_.workers - running_.size() : 0;
}

// Reads requests into the backlog while it holds fewer than the free slots plus one per stream, so
// each lane's head is in view for the score. The first read after a start takes this consumer's
// unacked requests of a previous run; with nothing new and nothing in hand, an idle node takes over
// requests another build node left idle past request_idle (it died).
void BuildNode::take_requests(kjqueue::Queue& q, std::size_t free, const std::vector<std::string>& tenants) {
  if (backlog_.size() >= free + 3 * tenants.size()) return;
  const std::size_t count = std::max<std::size_t>(1, free > backlog_.size() ? free - backlog_.size() : 1);
  bool idle;
  {
    std::lock_guard lk(mu_);
    idle = running_.empty();
  }
  auto reqs = q.read_build_requests(cfg_.node, tenants, count, idle && backlog_.empty() ? 1000ms : 0ms, !recovered_);
  if (!recovered_) {
    recovered_ = true;
    if (!reqs.empty()) log::info("build.requests_recovered", {{"requests", reqs.size()}});
  }
  if (reqs.empty() && backlog_.empty() && Clock::now() >= next_claim_) {
    reqs = q.claim_build_requests(cfg_.node, tenants, cfg_.build.request_idle, free);
    next_claim_ = Clock::now() + 5s;
    if (!reqs.empty()) log::info("build.requests_claimed", {{"requests", reqs.size()}});
  }
  if (reqs.empty()) return;
  std::vector<kjqueue::BuildRequest> settled;
  auto work = builds_for(q, store_, cfg_, cuda_archs_, reqs, settled);
  q.ack_build_requests(settled);
  std::lock_guard lk(mu_);
  for (auto& w : work) {
    auto& o = open_[request_name(w.request)];
    o.first = w.request;
    ++o.second;
    backlog_.push_back(std::move(w));
  }
}

void BuildNode::work_ended(const BuildWork& w) {
  auto it = open_.find(request_name(w.request));
  if (it == open_.end() || --it->second.second > 0) return;
  to_ack_.push_back(it->second.first);
  open_.erase(it);
}

void BuildNode::settle(kjqueue::Queue& q) {
  std::vector<kjqueue::BuildRequest> done;
  {
    std::lock_guard lk(mu_);
    done.swap(to_ack_);
  }
  q.ack_build_requests(done);
}

// Free slots go to the backlog's best-scored builds (lane x aging + time waited, as kj_fetch orders
// judging). A build whose job got a result, a cancel or passed its deadline meanwhile, or whose key
// someone else built or leased, is dropped; one held back by a cap stays for a later turn.
std::size_t BuildNode::dispatch(kjqueue::Queue& q) {
  std::size_t free = free_slots(), started = 0;
  const auto tenants = q.tenants();
  if (free == 0 || tenants.empty()) return 0;
  take_requests(q, free, tenants);
  std::stable_sort(backlog_.begin(), backlog_.end(), [](const BuildWork& a, const BuildWork& b) { return a.score > b.score; });
  std::vector<BuildWork> keep;
  for (auto& w : backlog_) {
    bool skip;
    {
      std::lock_guard lk(mu_);
      skip = free == 0 || !under_cap(w.job.tenant());
    }
    if (skip) {
      keep.push_back(std::move(w));
      continue;
    }
    bool drop = build_unwanted(q, w.job, w.entry);
    if (!drop) {
      {
        std::lock_guard lk(mu_);
        drop = running_.count(w.key) > 0;
      }
      const BuildClaim c = drop ? BuildClaim{} : store_.claim({w.key, w.job.tenant(), Clock::now(), std::nullopt, -1});
      if (!drop && c.kind == BuildClaim::Leased) {
        start(std::move(w));
        --free;
        ++started;
        continue;
      }
      drop = drop || store_.taken(w.key);  // not taken: a cap said no, try later
    }
    if (!drop) {
      keep.push_back(std::move(w));
      continue;
    }
    std::lock_guard lk(mu_);
    work_ended(w);
  }
  backlog_ = std::move(keep);
  return started;
}

void BuildNode::start(BuildWork work) {
  auto r = std::make_shared<Running>();
  r->work = std::move(work);
  {
    std::lock_guard lk(mu_);
    running_[r->work.key] = r;
    ++per_tenant_[r->work.job.tenant()];
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  threads_.push_back({std::thread([this, r, done] {
                        build(r);
                        {
                          std::lock_guard lk(mu_);
                          running_.erase(r->work.key);
                          if (--per_tenant_[r->work.job.tenant()] == 0) per_tenant_.erase(r->work.job.tenant());
                          work_ended(r->work);
                        }
                        *done = true;
                      }),
                      done});
}

void BuildNode::build(const RunningPtr& r) {
  const auto& job = r->work.job;
  SandboxWatch watch;
  watch.cancel_fd = r->cancel_fd;
  SandboxWatchScope scope(&watch);
  try {
    // this build's own copy of the config: the architecture its key was made with
    const PrebuildOutcome o = prebuild_kernelbench(job, with_cuda_arch_list(cfg_, r->work.cuda_arch_list), store_);
    ++builds_done_;
    log::info("build.done", {{"job_id", job.job_id()}, {"tenant", job.tenant()}, {"key", r->work.key},
                             {"cuda_arch_list", r->work.cuda_arch_list},
                             {"verdict", o.verdict}, {"message", o.message}, {"seconds", o.seconds},
                             {"cpu_seconds", o.cpu_seconds}, {"light_headers", o.light_headers}});
  } catch (const std::exception& e) {
    store_.release(r->work.key);  // a judging node builds it, or another build node
    log::error("build.failed", {{"job_id", job.job_id()}, {"key", r->work.key}, {"error", e.what()}});
  }
}

// Joins the build threads that have finished.
void BuildNode::reap_threads() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (!*it->done) {
      ++it;
      continue;
    }
    it->t.join();
    it = threads_.erase(it);
  }
}

void BuildNode::drain() {
  log::info("daemon.draining", {{"role", "build"}, {"timeout_s", cfg_.queue.drain_timeout.count()}});
  const auto until = Clock::now() + cfg_.queue.drain_timeout;
  while (!running().empty() && Clock::now() < until) {
    if (Clock::now() >= next_renew_) {
      store_.renew_held();
      next_renew_ = Clock::now() + cfg_.build.lease / 3;
    }
    std::this_thread::sleep_for(50ms);
  }
  store_.withdraw_builder();
  if (!running().empty()) {
    for (auto& r : running()) store_.release(r->work.key);
    log::warn("daemon.drain_timeout", {{"running", running().size()}});
    std::fflush(nullptr);
    ::_exit(0);
  }
  log::info("daemon.stopped", {{"role", "build"}, {"builds_done", builds_done_.load()}});
}

}  // namespace kj::buildfarm
