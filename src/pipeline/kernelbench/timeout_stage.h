// Where a candidate's wall limit ran out: the last stage its harness announced on the clock
// socket (python/kjudge_harness/candidate.py STAGE_MARKS), for the TIMEOUT's message. The marks
// come from the candidate's process, so they are words for a person, never evidence.
#pragma once

#include <string>
#include <vector>

#include "pipeline/timing/clock_reader.h"

namespace kj {

// " (in its timed loop, from 95 s; 26 s of waiting for the judge given back)", or the part that
// applies, or "" when neither does.
std::string timeout_stage(const std::vector<ClockMark>& marks, double given_back_seconds);

}  // namespace kj
