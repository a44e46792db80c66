#include "pipeline/build/slots.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "common/log.h"

namespace kj {

namespace {

struct Places {
  std::mutex mu;
  std::condition_variable cv;
  unsigned limit = 0;  // set at the first build
  unsigned in_use = 0;
  std::uint64_t next_ticket = 0;
  std::deque<std::uint64_t> line;  // tickets waiting, in arrival order
};

Places& places() {
  static Places p;
  return p;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return fd >= 0 && ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

}  // namespace

unsigned build_concurrency_for(unsigned cpus, std::uint64_t memory_bytes, const Config& cfg) {
  if (cfg.build.concurrency > 0) return static_cast<unsigned>(cfg.build.concurrency);
  const double per_build = cfg.sandbox.compile_cpus.value_or(0) > 0 ? *cfg.sandbox.compile_cpus : 2.0;
  const auto by_cpu = static_cast<unsigned>(std::max(1.0, cpus / per_build));
  const std::uint64_t per_mem = std::max<std::uint64_t>(cfg.sandbox.compile_memory_bytes, 1);
  const auto by_memory = static_cast<unsigned>(std::max<std::uint64_t>(1, memory_bytes / per_mem));
  return std::min(by_cpu, by_memory);
}

unsigned build_concurrency(const Config& cfg) {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t memory = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * page : 0;
  return build_concurrency_for(cpus > 0 ? static_cast<unsigned>(cpus) : 1, memory, cfg);
}

BuildSlot::BuildSlot(const Config& cfg, int cancel_fd) {
  constexpr auto kPoll = std::chrono::milliseconds(200);  // how soon a cancel is seen
  const auto t0 = std::chrono::steady_clock::now();
  Places& p = places();
  std::unique_lock lk(p.mu);
  if (p.limit == 0) {
    p.limit = build_concurrency(cfg);
    log::info("build.concurrency", {{"builds", p.limit}});
  }
  const std::uint64_t ticket = p.next_ticket++;
  p.line.push_back(ticket);
  while (!(p.line.front() == ticket && p.in_use < p.limit)) {
    if (readable(cancel_fd)) break;
    p.cv.wait_for(lk, kPoll);
  }
  held_ = p.line.front() == ticket && p.in_use < p.limit;
  p.line.erase(std::find(p.line.begin(), p.line.end(), ticket));
  if (held_) ++p.in_use;
  p.cv.notify_all();  // the next in line may take another free place
  waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

BuildSlot::~BuildSlot() {
  if (!held_) return;
  Places& p = places();
  std::lock_guard lk(p.mu);
  --p.in_use;
  p.cv.notify_all();
}

}  // namespace kj
