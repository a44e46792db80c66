// One job in its tenant's trusted worker: the files it needs in the worker's directory (the
// reference source, the directory of the candidate's channel socket, the clock socket of the
// reference's timed loop) and its two requests, `prepare` before the candidate runs and
// `results` after. The destructor forgets the job in the worker and removes its files.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/worker/trusted_worker.h"

namespace kj {

// Seconds waited for others, given back to a limit: as whole milliseconds, at most `most`.
std::chrono::milliseconds given_back(double waited_s, std::chrono::milliseconds most);

class WorkerJob {
 public:
  WorkerJob(std::shared_ptr<TrustedWorker> worker, std::string job_id, const std::string& reference_py,
            uid_t uid, gid_t gid);
  ~WorkerJob();
  WorkerJob(const WorkerJob&) = delete;
  WorkerJob& operator=(const WorkerJob&) = delete;

  // The host dir holding the channel socket: bound at /chan in the candidate's sandbox.
  std::filesystem::path channel_dir() const { return worker_->dir() / channel_rel_; }
  static constexpr const char* kChannelInCandidate = "/chan/sock";
  // The clock socket the worker's baseline loop marks (host path, for the daemon's ClockReader).
  std::filesystem::path clock_socket() const { return worker_->dir() / clock_rel_; }

  // `req` gets op, job_id and the paths added. `timeout` is the reference's own time: the
  // prepare's waits for other jobs (the worker's locks, its prepare budget) are given back, up to
  // `most_given_back`; `waited_s` is the worker's last figure for them. nullopt: the worker failed (`why`).
  std::optional<nlohmann::json> prepare(nlohmann::json req, std::chrono::milliseconds timeout,
                                        std::chrono::milliseconds most_given_back, std::string& why, double& waited_s);
  std::optional<nlohmann::json> results(std::chrono::milliseconds timeout, std::string& why);
  // How long the job's candidate has waited for the worker so far, the request in service
  // included (0 when the worker does not answer within `timeout`).
  double judge_seconds(std::chrono::milliseconds timeout) const;
  // How long the job's prepare, still running, has waited for other jobs (0 when not answered).
  double prepare_waited(std::chrono::milliseconds timeout) const;
  TrustedWorker& worker() { return *worker_; }
  const std::shared_ptr<TrustedWorker>& shared_worker() const { return worker_; }

 private:
  // The number `key` of the worker's answer to `op` about this job (0 when not answered in `timeout`).
  double ask_seconds(const char* op, const char* key, std::chrono::milliseconds timeout) const;

  std::shared_ptr<TrustedWorker> worker_;
  std::string id_;
  std::string reference_rel_, channel_rel_, clock_rel_;
  bool open_in_worker_ = false;
};

}  // namespace kj
