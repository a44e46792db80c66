// Run slots are exclusive per GPU while they hold it (design §3); the trusted workers hold it
// exclusively around timed loops and shared around their other GPU work (docs/gpu-worker.md): an flock on one file per node,
// taken by the native and the KernelBench pipelines alike after their builds, so compiles of
// other jobs run ahead while one job times on the GPU, and separate processes (kjudged workers,
// parallel `kjudge eval`s sharing a cache dir) never time on a shared GPU.
#pragma once

#include <filesystem>

#include "common/config.h"

namespace kj {

// <kernelbench.cache_dir or state_dir/cache>/gpu<index>.lock: the cache dir is the one thing
// every process judging on this node's GPUs shares; the index is sandbox.gpu_index.
std::filesystem::path gpu_lock_file(const Config& cfg);

// Beside it, gpu<index>.turn (cpu.turn for the cpu backend): a one-shot `kjudge eval` holds it from
// its trusted worker's start to its result, so parallel evals on one node build side by side but
// judge one at a time: each starts a trusted worker that budgets the whole device for itself.
std::filesystem::path device_turn_file(const Config& cfg, const std::string& backend);

class GpuLock {
 public:
  // Blocks until the lock is ours; seconds_waited() says how long that took.
  explicit GpuLock(const std::filesystem::path& file);
  ~GpuLock();
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;
  double seconds_waited() const { return waited_; }

 private:
  int fd_ = -1;
  double waited_ = 0;
};

}  // namespace kj
