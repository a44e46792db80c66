#include "pipeline/worker/job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/random.h"
#include "pipeline/run/pipeline_util.h"

namespace kj {
namespace fs = std::filesystem;
using nlohmann::json;

WorkerJob::WorkerJob(std::shared_ptr<TrustedWorker> worker, std::string job_id, const std::string& reference_py,
                     uid_t uid, gid_t gid)
    : worker_(std::move(worker)), id_(std::move(job_id)) {
  // A random name: unix socket paths are short, job ids may be long, and no job guesses another's.
  const std::string tag = random_suffix().substr(1);
  reference_rel_ = "refs/" + tag + ".py";
  channel_rel_ = "chan/" + tag;
  clock_rel_ = "clock/" + tag;
  for (const char* d : {"refs", "chan", "clock"}) fs::create_directories(worker_->dir() / d);
  fs::create_directories(channel_dir());
  for (const fs::path& p : {worker_->dir() / "refs", worker_->dir() / "chan", worker_->dir() / "clock", channel_dir()})
    if (::chown(p.c_str(), uid, gid) != 0 && ::geteuid() == 0) throw std::runtime_error("chown " + p.string() + " failed");
  write_file_atomic(worker_->dir() / reference_rel_, reference_py);
  ::chmod((worker_->dir() / reference_rel_).c_str(), 0644);
}

WorkerJob::~WorkerJob() {
  if (open_in_worker_) {
    std::string why;
    worker_->request({{"op", "forget"}, {"job_id", id_}}, std::chrono::seconds(5), &why);
  }
  std::error_code ec;
  fs::remove(worker_->dir() / reference_rel_, ec);
  fs::remove_all(channel_dir(), ec);
  fs::remove(clock_socket(), ec);
}

std::optional<json> WorkerJob::prepare(json req, std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds most_given_back, std::string& why, double& waited_s) {
  req["op"] = "prepare";
  req["job_id"] = id_;
  req["reference_path"] = reference_rel_;
  req["channel_path"] = channel_rel_ + "/sock";
  req["clock_path"] = "/job/" + clock_rel_;
  waited_s = 0.0;
  auto reply = worker_->request(req, timeout, &why, [&] {
    waited_s = prepare_waited(std::chrono::seconds(5));
    return given_back(waited_s, most_given_back);
  });
  open_in_worker_ = reply && reply->value("ok", false);
  return reply;
}

std::optional<json> WorkerJob::results(std::chrono::milliseconds timeout, std::string& why) {
  auto reply = worker_->request({{"op", "results"}, {"job_id", id_}, {"timeout", 10}}, timeout, &why);
  if (reply) open_in_worker_ = false;
  return reply;
}

double WorkerJob::ask_seconds(const char* op, const char* key, std::chrono::milliseconds timeout) const {
  std::string why;
  const auto reply = worker_->request({{"op", op}, {"job_id", id_}}, timeout, &why);
  return reply ? reply->value(key, 0.0) : 0.0;
}

double WorkerJob::judge_seconds(std::chrono::milliseconds timeout) const {
  return ask_seconds("judge_seconds", "judge_seconds", timeout);
}

double WorkerJob::prepare_waited(std::chrono::milliseconds timeout) const {
  return ask_seconds("prepare_waited", "waited_seconds", timeout);
}

std::chrono::milliseconds given_back(double waited_s, std::chrono::milliseconds most) {
  return std::min(std::chrono::milliseconds(static_cast<std::int64_t>(1000.0 * waited_s)), most);
}

}  // namespace kj
