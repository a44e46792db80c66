// The daemon's clock channel: single-byte marks on the FIFO the request names (clock_path).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace kjudge::runner {

// Marks: 'D' the device is set up (driver, context), before any job code is loaded (the daemon
// believes a device_unavailable report only without it; the KernelBench candidate role writes it
// too, python/kjudge_harness/candidate.py); 'S' the timed loop starts, 'T' per timed call, 'E' the
// loop ends.
inline constexpr char kDeviceReadyMark = 'D';

// The daemon's clock channel. Writes are single bytes to a FIFO (atomic); failures are ignored: a
// missing mark makes the daemon's cross-check fail closed, not the run.
class ClockMarks {
 public:
  explicit ClockMarks(const std::string& path) {
    if (!path.empty()) fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  }
  ~ClockMarks() {
    if (fd_ >= 0) ::close(fd_);
  }
  ClockMarks(const ClockMarks&) = delete;
  ClockMarks& operator=(const ClockMarks&) = delete;
  void mark(char c) const {
    if (fd_ >= 0) [[maybe_unused]] auto n = ::write(fd_, &c, 1);
  }

 private:
  int fd_ = -1;
};

}  // namespace kjudge::runner
