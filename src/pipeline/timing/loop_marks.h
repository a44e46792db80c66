// The timed loops on the daemon's clock: a loop is S, then per call B (inputs ready, device idle)
// and T (the call's work done), then E (python/kjudge_protocol/timing.py). The kernel stamps each
// mark when it is sent, so T - B is the trusted side's own figure for each call.
#pragma once

#include <cstddef>
#include <vector>

#include "pipeline/timing/clock_reader.h"

namespace kj {

struct TimedLoop {
  double span_ms = 0;           // S .. E
  std::size_t calls = 0;        // T marks between S and E
  std::vector<double> call_ms;  // T - B of each call that has both (empty if any call lacks its B)
};

// Every S .. E loop in the marks, in order.
std::vector<TimedLoop> timed_loops(const std::vector<ClockMark>& marks);

}  // namespace kj
