// One resident trusted worker (python/kjudge_worker): a Python process with torch imported and
// the device initialised once, in its own sandbox (the GPU's device profile, its own directory,
// no network), serving one tenant on this node's GPU (or the CPU). kjudged starts it on first
// use and talks to it over a unix socket in its directory: one JSON line in, one JSON line out
// per connection. It exits by itself when idle; a dead or idle-exited worker is replaced.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/config.h"

namespace kj {

class TrustedWorker {
 public:
  // `dir`: the worker's directory on the host (/job inside). `gpu`: the nvidia-cuda profile.
  TrustedWorker(const Config& cfg, std::filesystem::path dir, bool gpu);
  ~TrustedWorker();  // kills its sandbox and waits for it
  TrustedWorker(const TrustedWorker&) = delete;
  TrustedWorker& operator=(const TrustedWorker&) = delete;

  // Asked when a request's time is up: the time given back to it so far (in total), which moves
  // its deadline on from `timeout` after it was sent.
  using Extension = std::function<std::chrono::milliseconds()>;
  // One request and its reply; nullopt when the worker is gone or gave no answer in `timeout`
  // (plus what `extension` gives back; `why` says which). Waits for a worker that is still starting.
  std::optional<nlohmann::json> request(const nlohmann::json& req, std::chrono::milliseconds timeout,
                                        std::string* why = nullptr, const Extension& extension = {});
  bool alive() const { return alive_; }
  const std::filesystem::path& dir() const { return dir_; }
  // Kills it (a reference that never returns holds the worker; the next job gets a new one).
  void kill();

 private:
  void supervise(const Config& cfg, bool gpu);

  std::filesystem::path dir_;
  int cancel_fd_ = -1;
  std::atomic<bool> alive_{true};
  std::string exit_detail_;
  std::thread thread_;
};

}  // namespace kj
