#include "daemon/gpu_placement.h"

#include <fmt/format.h>

#include <stdexcept>

namespace kj {

GpuPlacement::GpuPlacement(std::vector<int> gpus, const GpuHealth& health) : gpus_(std::move(gpus)), health_(health) {
  if (gpus_.empty()) throw std::invalid_argument("a node needs at least one GPU index");
  for (int g : gpus_) running_[g] = 0;
}

std::optional<int> GpuPlacement::pick_locked() const {
  std::optional<int> best;
  for (int g : gpus_)
    if (health_.usable(g) && (!best || running_.at(g) < running_.at(*best))) best = g;
  return best;
}

std::optional<int> GpuPlacement::place(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock lk(mu_);
  for (;;) {
    if (auto g = pick_locked()) {
      ++running_[*g];
      return g;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // a release wakes us; health changes are not signalled here, so look again every 100 ms
    released_.wait_until(lk, std::min(deadline, now + std::chrono::milliseconds(100)));
  }
}

void GpuPlacement::release(int gpu) {
  {
    std::lock_guard lk(mu_);
    auto it = running_.find(gpu);
    if (it != running_.end() && it->second > 0) --it->second;
  }
  released_.notify_all();
}

bool GpuPlacement::any_usable() const {
  for (int g : gpus_)
    if (health_.usable(g)) return true;
  return false;
}

std::map<int, unsigned> GpuPlacement::running() const {
  std::lock_guard lk(mu_);
  return running_;
}

std::string GpuPlacement::render_metrics() const {
  std::string out =
      "# HELP kjudge_gpu_running_jobs Jobs placed on the GPU and not finished.\n"
      "# TYPE kjudge_gpu_running_jobs gauge\n";
  for (const auto& [g, n] : running()) out += fmt::format("kjudge_gpu_running_jobs{{gpu=\"{}\"}} {}\n", g, n);
  return out;
}

}  // namespace kj
