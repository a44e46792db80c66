#include "daemon/daemon.h"

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <google/protobuf/util/time_util.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <variant>

#include "common/log.h"
#include "pipeline/judge.h"
#include "pipeline/validate.h"
#include "pipeline/workspace.h"

namespace kj {
namespace v1 = kjudge::v1;
using namespace std::chrono_literals;

namespace {

kjqueue::Endpoint endpoint(const Config& cfg) {
  kjqueue::Endpoint e;
  e.url = cfg.redis.url;
  e.username = cfg.redis.username;
  e.password = cfg.redis.password;
  return e;
}

// Each slot thread keeps its own connection (hiredis contexts are not thread-safe).
kjqueue::Queue& slot_queue(const Config& cfg) {
  thread_local std::unique_ptr<kjqueue::Queue> q;
  if (!q) q = std::make_unique<kjqueue::Queue>(endpoint(cfg), cfg.redis.partition);
  return *q;
}

bool expired(const v1::Job& job) {
  using google::protobuf::util::TimeUtil;
  return job.has_deadline() && job.deadline().seconds() > 0 && TimeUtil::GetCurrentTime() > job.deadline();
}

}  // namespace

Daemon::Daemon(Config cfg) : cfg_(std::move(cfg)), slots_(cfg_.workers) {}

Daemon::~Daemon() {
  request_stop();
  if (fetcher_.joinable()) fetcher_.join();
  slots_.join();
}

void Daemon::request_stop() {
  stopping_ = true;
  slot_free_.notify_all();
}

int Daemon::run() {
  prepare_state_dir(cfg_.state_dir);
  loop_queue_ = std::make_unique<kjqueue::Queue>(endpoint(cfg_), cfg_.redis.partition);
  loop_queue_->load_functions();
  log::info("daemon.started", {{"node", cfg_.node}, {"workers", cfg_.workers}, {"redis", cfg_.redis.url},
                               {"state_dir", cfg_.state_dir.string()}, {"partition", cfg_.redis.partition}});

  boost::asio::signal_set signals(ioc_, SIGTERM, SIGINT);
  signals.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("daemon.stopping", {{"signal", sig}});
    request_stop();
    heartbeat_timer_.cancel();
  });
  heartbeat();
  fetcher_ = std::thread([this] { fetch_loop(); });
  ioc_.run();  // returns once the signal handler ran and the timer is cancelled

  fetcher_.join();
  slots_.join();  // drain: jobs in hand finish and store their results
  try {
    loop_queue_->command({"DEL", kjqueue::Keys::node(cfg_.redis.partition, cfg_.node)});
  } catch (const kjqueue::QueueError&) {
  }
  log::info("daemon.stopped", {{"jobs_done", jobs_done_.load()}});
  return 0;
}

void Daemon::heartbeat() {
  if (stopping_) return;
  try {
    unsigned busy;
    {
      std::lock_guard lk(mu_);
      busy = busy_;
    }
    nlohmann::json info = {{"version", KJUDGE_VERSION}, {"workers", cfg_.workers}, {"busy", busy},
                           {"jobs_done", jobs_done_.load()}, {"pid", ::getpid()}};
    loop_queue_->heartbeat(cfg_.node, info.dump(), cfg_.heartbeat_ttl);
  } catch (const kjqueue::QueueError& e) {
    log::warn("heartbeat.failed", {{"error", e.what()}});
    try {
      loop_queue_ = std::make_unique<kjqueue::Queue>(endpoint(cfg_), cfg_.redis.partition);
    } catch (const kjqueue::QueueError&) {
    }
  }
  heartbeat_timer_.expires_after(cfg_.heartbeat_ttl / 3);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) heartbeat();
  });
}

void Daemon::fetch_loop() {
  std::unique_ptr<kjqueue::Queue> q;
  unsigned next_slot = 0;
  while (!stopping_) {
    std::size_t free;
    {
      // Fetch only what we can start now: entries we hold but don't run would wait behind us
      // while another node sits idle.
      std::unique_lock lk(mu_);
      slot_free_.wait(lk, [&] { return stopping_ || busy_ < cfg_.workers; });
      if (stopping_) break;
      free = cfg_.workers - busy_;
    }
    try {
      if (!q) q = std::make_unique<kjqueue::Queue>(endpoint(cfg_), cfg_.redis.partition);
      auto batch = q->fetch(cfg_.node, free, 1000ms);
      for (auto& d : batch) {
        {
          std::lock_guard lk(mu_);
          ++busy_;
        }
        const unsigned slot = next_slot++ % cfg_.workers;
        boost::asio::post(slots_, [this, d = std::move(d), slot] {
          process(d, slot);
          {
            std::lock_guard lk(mu_);
            --busy_;
          }
          slot_free_.notify_all();
        });
      }
    } catch (const kjqueue::QueueError& e) {
      log::error("fetch.failed", {{"error", e.what()}});
      q.reset();
      std::this_thread::sleep_for(1s);
    }
  }
}

void Daemon::process(const kjqueue::Delivery& d, unsigned slot) {
  const std::string worker = cfg_.node + "/" + std::to_string(slot);
  const auto t0 = std::chrono::steady_clock::now();
  v1::Result result;
  std::string job_id = d.job_id.empty() ? d.entry_id : d.job_id;
  auto decoded = decode_job(d.payload, d.tenant, cfg_.limits);
  if (auto* bad = std::get_if<InvalidJob>(&decoded)) {
    result = invalid_job_result(job_id, d.tenant, bad->message, worker);
  } else {
    auto& job = std::get<v1::Job>(decoded);
    job_id = job.job_id();
    if (!d.job_id.empty() && d.job_id != job.job_id()) {
      result = invalid_job_result(d.job_id, d.tenant, "queue entry id field differs from job.job_id", worker);
      job_id = d.job_id;
    } else if (expired(job)) {
      result = invalid_job_result(job.job_id(), d.tenant, "deadline passed before the job started", worker);
      result.set_status(v1::EXPIRED);
      result.clear_reward();
    } else {
      log::info("job.started", {{"job_id", job_id}, {"tenant", d.tenant}, {"worker", worker}});
      result = judge(job, JudgeContext{cfg_, worker});
    }
  }
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string verdict = v1::Verdict_Name(result.status());
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      const bool stored = slot_queue(cfg_).complete(d, job_id, result.SerializeAsString(), verdict, cfg_.result_ttl);
      log::info("job.done", {{"job_id", job_id}, {"tenant", d.tenant}, {"verdict", verdict},
                             {"seconds", secs}, {"stored", stored}, {"message", result.message()}});
      ++jobs_done_;
      return;
    } catch (const kjqueue::QueueError& e) {
      // The entry stays pending; the reaper (reliability issue) hands it to another node.
      log::error("job.complete_failed", {{"job_id", job_id}, {"error", e.what()}, {"attempt", attempt}});
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
  }
}

}  // namespace kj
