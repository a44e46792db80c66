#include "pipeline/timing/loop_marks.h"

#include <chrono>
#include <optional>

namespace kj {

namespace {
double ms_between(const ClockMark& a, const ClockMark& b) {
  return std::chrono::duration<double, std::milli>(b.at - a.at).count();
}
}  // namespace

std::vector<TimedLoop> timed_loops(const std::vector<ClockMark>& marks) {
  std::vector<TimedLoop> loops;
  std::optional<TimedLoop> open;
  const ClockMark* start = nullptr;
  const ClockMark* before_call = nullptr;
  bool every_call_bracketed = true;
  for (const auto& m : marks) {
    if (m.event == 'S') {
      open.emplace();
      start = &m, before_call = nullptr, every_call_bracketed = true;
    } else if (!open) {
      continue;
    } else if (m.event == 'B') {
      before_call = &m;
    } else if (m.event == 'T') {
      ++open->calls;
      if (before_call != nullptr) open->call_ms.push_back(ms_between(*before_call, m));
      every_call_bracketed &= before_call != nullptr;
      before_call = nullptr;
    } else if (m.event == 'E') {
      open->span_ms = ms_between(*start, m);
      if (!every_call_bracketed) open->call_ms.clear();
      loops.push_back(std::move(*open));
      open.reset();
    }
  }
  return loops;
}

}  // namespace kj
