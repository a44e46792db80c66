#include "pipeline/gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>

#include "pipeline/sandbox_profiles.h"

namespace kj {

std::filesystem::path gpu_lock_file(const Config& cfg) {
  const auto dir = cfg.kernelbench.cache_dir.empty() ? cfg.state_dir / "cache" : cfg.kernelbench.cache_dir;
  std::filesystem::create_directories(dir);
  return dir / ("gpu" + std::to_string(gpu_index(cfg)) + ".lock");  // one per device: daemons on other GPUs go on
}

GpuLock::GpuLock(const std::filesystem::path& file) {
  const auto t0 = std::chrono::steady_clock::now();
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open GPU lock " + file.string());
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd_);
    throw std::system_error(e, std::generic_category(), "flock GPU lock " + file.string());
  }
  waited_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace kj
