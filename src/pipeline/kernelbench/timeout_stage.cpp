#include "pipeline/kernelbench/timeout_stage.h"

#include <fmt/format.h>

#include <chrono>
#include <map>

namespace kj {

namespace {
// kjudge_harness/candidate.py STAGE_MARKS: the byte each stage sends as it begins
const std::map<char, const char*> kStageMarks = {{'l', "loading its code"},
                                                 {'i', "building its model"},
                                                 {'c', "its correctness calls"},
                                                 {'t', "its timed loop"},
                                                 {'r', "the legality trace"}};
}  // namespace

std::string timeout_stage(const std::vector<ClockMark>& marks, double given_back_seconds) {
  const ClockMark* last = nullptr;
  for (const auto& m : marks)
    if (kStageMarks.count(m.event)) last = &m;
  std::string said;
  if (last != nullptr) {
    const double from = std::chrono::duration<double>(last->at - marks.front().at).count();
    said = fmt::format("in {}, from {:.0f} s", kStageMarks.at(last->event), from);
  }
  if (given_back_seconds >= 0.5)
    said += fmt::format("{}{:.0f} s of waiting for the judge given back", said.empty() ? "" : "; ", given_back_seconds);
  return said.empty() ? "" : " (" + said + ")";
}

}  // namespace kj
