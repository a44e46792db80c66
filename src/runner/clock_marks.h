// The daemon's clock channel: marks sent as datagrams to the unix socket the request names
// (clock_path); the kernel stamps each datagram when it is sent (pipeline/timing/clock_reader.h).
#pragma once

#include <string>

namespace kjudge::runner {

// Marks: 'D' the device is set up (driver, context), before any job code is loaded (the daemon
// believes a device_unavailable report only without it; the KernelBench candidate role writes it
// too, python/kjudge_harness/candidate.py); 'S' the timed loop starts, 'T' per timed call, 'E' the
// loop ends.
inline constexpr char kDeviceReadyMark = 'D';

// The writer. Only 'S' and 'E' need a time: 'T' marks are held and sent in front of the next
// other mark, so a loop is three datagrams however many calls it makes and never fills the
// daemon's queue. A send waits up to a second for room; failures are otherwise ignored: a missing
// mark makes the daemon's cross-check fail closed, not the run.
class ClockMarks {
 public:
  explicit ClockMarks(const std::string& path);
  ~ClockMarks();
  ClockMarks(const ClockMarks&) = delete;
  ClockMarks& operator=(const ClockMarks&) = delete;
  void mark(char c);

 private:
  void send_held();
  int fd_ = -1;
  std::string held_;
};

}  // namespace kjudge::runner
