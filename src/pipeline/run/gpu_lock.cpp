#include "pipeline/run/gpu_lock.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>

#include "pipeline/run/sandbox_profiles.h"

namespace kj {

std::filesystem::path gpu_lock_file(const Config& cfg) {
  const auto dir = cfg.kernelbench.cache_dir.empty() ? cfg.state_dir / "cache" : cfg.kernelbench.cache_dir;
  std::filesystem::create_directories(dir);
  return dir / ("gpu" + std::to_string(gpu_index(cfg)) + ".lock");  // one per device: daemons on other GPUs go on
}

std::filesystem::path device_turn_file(const Config& cfg, const std::string& backend) {
  return gpu_lock_file(cfg).parent_path() /
         (backend == "cpu" ? std::string("cpu.turn") : "gpu" + std::to_string(gpu_index(cfg)) + ".turn");
}

namespace {

int open_lock(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open GPU lock " + file.string());
  ::fchmod(fd, 0666);  // the trusted workers (the sandbox's user) take it too
  return fd;
}

void flock_or_throw(int fd, int how, const std::filesystem::path& file) {
  while (::flock(fd, how) != 0) {
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "flock GPU lock " + file.string());
  }
}

}  // namespace

// Exclusive, through the turnstile the trusted workers' shared holders also pass
// (python/kjudge_worker/gpu_lock.py), so a stream of shared holders cannot starve it.
GpuLock::GpuLock(const std::filesystem::path& file) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path gate_file = file.string() + ".turnstile";
  const int gate = open_lock(gate_file);
  flock_or_throw(gate, LOCK_EX, gate_file);
  fd_ = open_lock(file);
  try {
    flock_or_throw(fd_, LOCK_EX, file);
  } catch (...) {
    ::close(gate);
    throw;
  }
  ::close(gate);
  waited_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace kj
