// A job slot of the Daemon: one job from its queue entry to its stored result. Checks cancel,
// deadline and delivery count, places the job on a GPU, runs judge(), stores the result with
// kj_complete (or retries an INFRA_ERROR with backoff, dead-letters past max deliveries), and has
// the GPU checked after a fault, hang or kill.
#include "daemon/daemon.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <variant>

#include "common/job_clock.h"
#include "common/log.h"
#include "common/redis_endpoint.h"
#include "common/sha256.h"
#include "daemon/held_entry.h"
#include "pipeline/judge.h"
#include "pipeline/job/validate.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/verdict/verdict.h"

namespace kj {
namespace v1 = kjudge::v1;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Each slot thread keeps its own connection (hiredis contexts are not thread-safe).
kjqueue::Queue& slot_queue(const Config& cfg) {
  thread_local std::unique_ptr<kjqueue::Queue> q;
  if (!q) q = std::make_unique<kjqueue::Queue>(redis_endpoint(cfg.redis), cfg.redis.partition);
  return *q;
}

// A job the daemon ends before or around the pipeline (pipeline/verdict/verdict.h builds the decision).
v1::Result status_result(const std::string& job_id, const std::string& tenant, const Decision& d,
                         const std::string& worker) {
  v1::Result r = invalid_job_result(job_id, tenant, d.message, worker);
  record_verdict(r, d);
  r.clear_reward();
  r.clear_feedback();
  return r;
}

// A job that named its group (client_meta "group", as kjudge.turns reads it) counts in its batch's
// turn tally; a long name is counted by its hash, which keeps the tenant's hash fields small.
void name_turn(const v1::Result& r, kjqueue::CompleteOptions& opts) {
  const auto g = r.client_meta().find("group");
  if (g == r.client_meta().end() || g->second.empty()) return;
  opts.group = g->second.size() <= 128 ? g->second : "sha256:" + sha256_hex(g->second);
  opts.turn = r.turn_index();
}

// Exponential backoff with full jitter in [base*2^(n-1)/2, base*2^(n-1)], capped.
std::chrono::milliseconds backoff(const QueueConfig& q, unsigned attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double exp = static_cast<double>(q.retry_base.count()) * static_cast<double>(1ull << std::min(attempt - 1, 20u));
  const double cap = std::min(exp, static_cast<double>(q.retry_max.count()));
  std::uniform_real_distribution<double> jitter(cap / 2, cap);
  return std::chrono::milliseconds(static_cast<long long>(jitter(rng)));
}

}  // namespace

// A usable GPU for the job, the least busy: waits while none is (a canary runs, or all are
// quarantined); -1 only when the daemon stops meanwhile (the job is then an INFRA_ERROR, retried).
int Daemon::place_job() {
  for (;;) {
    if (auto gpu = placement_.place(std::chrono::seconds(1))) return *gpu;
    if (stopping_) return -1;
  }
}

// The job's result is stored; its slot stays busy while the canary checks the GPU it faulted,
// hung or was killed on. The canary holds the GPU lock, so it never runs beside another job's timing.
void Daemon::check_gpu(const HeldPtr& h) {
  if (h->gpu_outcome == GpuJobOutcome::Clean || h->gpu < 0) return;
  try {
    GpuLock lock(gpu_lock_file(config_for_gpu(h->gpu)));
    if (!gpu_health_.after_job(h->gpu, h->gpu_outcome, h->gpu_incident))
      log::error("gpu.unusable", {{"gpu", h->gpu}, {"after_job", h->d.job_id}, {"node", cfg_.node}});
  } catch (const std::exception& e) {
    gpu_health_.quarantine(h->gpu, std::string("health check failed: ") + e.what());
  }
}

Config Daemon::config_for_gpu(int gpu) const {
  Config c = cfg_;
  c.sandbox.gpu_index = gpu;
  return c;
}

void Daemon::finish(const HeldPtr& h) {
  {
    std::lock_guard lk(mu_);
    held_.erase(held_key(h->d));
    --busy_;
    if (--running_[h->d.tenant] == 0) running_.erase(h->d.tenant);
  }
  slot_free_.notify_all();
}

void Daemon::process(const HeldPtr& h, unsigned slot) {
  const kjqueue::Delivery& d = h->d;
  const std::string worker = cfg_.node + "/" + std::to_string(slot);
  const auto t0 = Clock::now();
  const unsigned deliveries = d.attempt + d.deliveries;  // across retries
  v1::Result result;
  std::string job_id = d.job_id.empty() ? d.entry_id : d.job_id;
  kjqueue::CompleteOptions opts;
  bool retry = false;

  bool cancelled = false;
  try {
    auto c = slot_queue(cfg_).cancelled({{d.tenant, d.job_id, d.batch_id}});
    cancelled = !c.empty() && c.front();
  } catch (const kjqueue::QueueError& e) {
    ++metrics_.redis_errors;  // unknown: run it; a cancel seen later still turns it into CANCELLED
  }

  if (deliveries > cfg_.queue.max_deliveries) {
    // Delivered too often without a result (nodes died under it, or it keeps failing): stop,
    // and tell the client it was our fault.
    const auto gave_up = "gave up after " + std::to_string(deliveries - 1) + " deliveries without a result";
    result = status_result(job_id, d.tenant, node_fault(gave_up), worker);
    opts.dead_reason = "max deliveries (" + std::to_string(cfg_.queue.max_deliveries) + ") exceeded";
  } else if (cancelled) {
    result = status_result(job_id, d.tenant, ended_by_cancel("cancelled before it started"), worker);
  } else {
    auto decoded = decode_for_judge(d.payload, d.tenant, cfg_.limits, cfg_.testing);
    if (auto* bad = std::get_if<InvalidJob>(&decoded)) {
      result = invalid_job_result(job_id, d.tenant, bad->message, worker);
    } else {
      auto& job = std::get<v1::Job>(decoded);
      job_id = job.job_id();
      if (!d.job_id.empty() && d.job_id != job.job_id()) {
        result = invalid_job_result(d.job_id, d.tenant, "queue entry id field differs from job.job_id", worker);
        job_id = d.job_id;
      } else if (deadline_passed(job, kj::now_timestamp())) {
        result =
            status_result(job.job_id(), d.tenant, ended_by_deadline("deadline passed before the job started"), worker);
      } else {
        if (auto wait = queue_wait_seconds(job, kj::now_timestamp())) metrics_.observe_queue_wait(d.tenant, *wait);
        log::debug("job.started", {{"job_id", job_id}, {"tenant", d.tenant}, {"worker", worker}, {"deliveries", deliveries}});
        const auto j0 = Clock::now();
        SandboxWatch watch;
        watch.cancel_fd = h->cancel_fd;
        h->gpu = place_job();
        watch.gpu_quarantined = [this, gpu = h->gpu] { return gpu_health_.quarantined(gpu); };
        result = h->gpu < 0 ? status_result(job_id, d.tenant, node_fault("no healthy GPU on this node"), worker)
                            : judge(job, JudgeContext{config_for_gpu(h->gpu), worker, &watch, builds_.get(), false, deliveries});
        // a GPU that could not give a run a context is checked as after a fault
        h->gpu_outcome = GpuHealth::classify(result.status() == v1::CUDA_FAULT, watch.gpu_unavailable > 0, false,
                                             watch.gpu_runs_killed > 0, watch.gpu_runs_stuck > 0);
        h->gpu_incident = job_id + ": " + (result.status() == v1::CUDA_FAULT ? result.message() : watch.last_gpu_incident);
        metrics_.judge_seconds.observe(std::chrono::duration<double>(Clock::now() - j0).count());
        if (h->cancel) {
          // Its sandboxes were killed (or it finished just before): whatever the pipeline made of
          // that is not the candidate's verdict.
          result = status_result(job_id, d.tenant, ended_by_cancel("cancelled while running"), worker);
          ++metrics_.cancelled_running;
        } else if (result.status() == v1::INFRA_ERROR) {
          if (deliveries < cfg_.queue.max_deliveries) retry = true;
          else opts.dead_reason = "INFRA_ERROR on delivery " + std::to_string(deliveries) + ": " + result.message();
        }
      }
    }
  }
  result.set_attempt(deliveries);
  if (!d.batch_id.empty() && result.batch_id().empty()) result.set_batch_id(d.batch_id);
  name_turn(result, opts);
  const auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string verdict = v1::Verdict_Name(result.status());

  // Store it. Redis may be down for a while (restart, failover): keep trying while the lease
  // timer keeps the entry ours; give up only on shutdown or after a minute, leaving the entry
  // pending for a reaper.
  const auto give_up = Clock::now() + 60s;
  // Its place in the tenant's cluster-wide running set goes once the entry is acked; if Redis is
  // unreachable now, the member expires with the lease instead.
  auto release_cap = [&] {
    if (!h->cluster_capped) return;
    try {
      slot_queue(cfg_).release_running({ref_of(d)});
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
    }
  };
  for (unsigned attempt = 0;; ++attempt) {
    try {
      const auto c0 = Clock::now();
      if (retry) {
        const auto delay = backoff(cfg_.queue, deliveries);
        slot_queue(cfg_).retry_later(d, job_id, deliveries, std::chrono::system_clock::now() + delay);
        ++metrics_.retries;
        log::warn("job.retry", {{"job_id", job_id}, {"tenant", d.tenant}, {"deliveries", deliveries},
                                {"delay_ms", delay.count()}, {"message", result.message()}});
        release_cap();
        return;
      }
      const bool stored = slot_queue(cfg_).complete(d, job_id, result.SerializeAsString(), verdict, cfg_.result_ttl, opts);
      metrics_.complete_seconds.observe(std::chrono::duration<double>(Clock::now() - c0).count());
      if (stored) metrics_.count_verdict(d.tenant, verdict);
      if (stored && !opts.dead_reason.empty()) {
        ++metrics_.dead_letters;
        log::error("job.dead_letter", {{"job_id", job_id}, {"tenant", d.tenant}, {"reason", opts.dead_reason}});
      }
      log::info("job.done", {{"job_id", job_id}, {"tenant", d.tenant}, {"verdict", verdict}, {"gpu", h->gpu},
                             {"seconds", secs}, {"stored", stored}, {"message", result.message()}});
      ++jobs_done_;
      release_cap();
      return;
    } catch (const kjqueue::QueueError& e) {
      ++metrics_.redis_errors;
      log::error("job.complete_failed", {{"job_id", job_id}, {"error", e.what()}, {"attempt", attempt}});
      if (Clock::now() > give_up) return;  // the entry stays pending: a reaper hands it on
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100u << std::min(attempt, 4u), 1000u)));
    }
  }
}
}  // namespace kj
