#include "common/key_file_lock.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace kj {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(200);  // how soon a released lock or a cancel is seen

// True once fd is readable (the job's cancel fd), waiting at most `wait`; just sleeps without one.
bool readable_within(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  const int n = ::poll(fd >= 0 ? &p : nullptr, fd >= 0 ? 1 : 0, static_cast<int>(wait.count()));
  return fd >= 0 && n > 0 && (p.revents & POLLIN);
}

}  // namespace

KeyFileLock::KeyFileLock(const std::filesystem::path& file, int cancel_fd, std::chrono::steady_clock::time_point until) {
  const auto t0 = std::chrono::steady_clock::now();
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open build lock " + file.string());
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      result_ = Result::Held;
      break;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int e = errno;
      ::close(fd_);
      throw std::system_error(e, std::generic_category(), "flock build lock " + file.string());
    }
    contended_ = true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (readable_within(cancel_fd, std::min<std::chrono::milliseconds>(kPoll, left + std::chrono::milliseconds(1)))) {
      result_ = Result::Cancelled;
      break;
    }
  }
  waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

KeyFileLock::~KeyFileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace kj
