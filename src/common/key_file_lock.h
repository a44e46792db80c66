// The cross-process half of a build's single flight: an exclusive flock on one file per build key
// in the cache dir, held by the process building that key. Every process sharing the cache dir
// (kjudged's slots, a build node on the same host, parallel `kjudge eval`s) then builds a key
// once: the others wait here and find the build in the memo. Polled, so the waiting job's cancel
// and deadline end the wait; the lock goes with its holder if it dies.
#pragma once

#include <chrono>
#include <filesystem>

namespace kj {

class KeyFileLock {
 public:
  enum class Result { Held, Cancelled, TimedOut };
  // Waits for the lock on `file` (created if missing) until cancel_fd (-1: none) is readable or
  // `until` passes. Throws std::system_error when the file cannot be opened.
  KeyFileLock(const std::filesystem::path& file, int cancel_fd, std::chrono::steady_clock::time_point until);
  ~KeyFileLock();
  KeyFileLock(const KeyFileLock&) = delete;
  KeyFileLock& operator=(const KeyFileLock&) = delete;
  Result result() const { return result_; }
  double seconds_waited() const { return waited_s_; }
  bool contended() const { return contended_; }  // another process held it when we came

 private:
  int fd_ = -1;
  Result result_ = Result::TimedOut;
  double waited_s_ = 0;
  bool contended_ = false;
};

}  // namespace kj
