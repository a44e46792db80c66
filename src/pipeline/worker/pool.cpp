#include "pipeline/worker/pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>

#include "pipeline/run/sandbox_profiles.h"
#include "pipeline/run/workspace.h"

namespace kj {
namespace fs = std::filesystem;

namespace {

struct Pool {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<TrustedWorker>> workers;
  ~Pool() { workers.clear(); }  // static destruction: kill what is left
};

Pool& pool() {
  static Pool p;
  return p;
}

// One per worker instance: parallel `kjudge eval`s may share a state dir, and a replaced worker
// removes its own dir when it goes.
fs::path worker_dir(const Config& cfg, const std::string& key) {
  static std::atomic<unsigned> made{0};
  const fs::path dir = cfg.state_dir / "workers" / fmt::format("{}.{}.{}", key, ::getpid(), made++);
  fs::create_directories(dir);
  ::chmod(dir.parent_path().c_str(), 0711);
  ::chmod(dir.c_str(), 0700);
  if (::chown(dir.c_str(), sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid)) != 0 &&
      ::geteuid() == 0)
    throw std::runtime_error("chown " + dir.string() + " failed");
  return dir;
}

}  // namespace

std::shared_ptr<TrustedWorker> trusted_worker(const Config& cfg, const std::string& tenant, bool gpu) {
  // one per GPU too: the job's config names the GPU it was placed on (sandbox.gpu_index)
  const std::string key = tenant + (gpu ? fmt::format("-gpu{}", gpu_index(cfg)) : "-cpu");
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  auto& w = p.workers[key];
  if (!w || !w->alive()) w = std::make_shared<TrustedWorker>(cfg, worker_dir(cfg, key), gpu);
  return w;
}

void stop_trusted_workers() {
  std::map<std::string, std::shared_ptr<TrustedWorker>> gone;
  {
    std::lock_guard lock(pool().mu);
    gone.swap(pool().workers);
  }
  gone.clear();
}

}  // namespace kj
