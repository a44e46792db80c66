// Which of the node's GPUs a job runs on (issue: one kjudged drives every GPU of its node). A job
// waits for any healthy GPU, never a fixed one: place() picks the usable GPU (GpuHealth: not
// quarantined, no canary running) with the fewest jobs on it, ties to the lowest index, so every
// GPU stays busy and a quarantined one gets nothing while the others go on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/gpu_health.h"

namespace kj {

class GpuPlacement {
 public:
  GpuPlacement(std::vector<int> gpus, const GpuHealth& health);

  // A usable GPU for one job, counted until release(); waits up to `wait` for one (a canary may
  // be running, or every GPU is quarantined). Nothing: none became usable in time.
  std::optional<int> place(std::chrono::milliseconds wait);
  void release(int gpu);
  // Some GPU could take a job now (the fetch loop takes no work while none can).
  bool any_usable() const;
  const std::vector<int>& gpus() const { return gpus_; }
  std::map<int, unsigned> running() const;  // jobs per GPU now
  std::string render_metrics() const;       // kjudge_gpu_running_jobs{gpu="N"}

 private:
  std::optional<int> pick_locked() const;

  const std::vector<int> gpus_;
  const GpuHealth& health_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::map<int, unsigned> running_;
};

}  // namespace kj
