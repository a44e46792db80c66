// Short text for a repair turn: what went wrong and where, never seeds or expected values.
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

// The lines of a compiler log that matter (errors first, with a little context), bounded.
std::string compile_log_excerpt(const std::string& log, std::size_t max_lines = 12);

// detail: the stage's own repair text (a compile error at the candidate's line, an exception with
// the candidate's frames), put after the verdict's words; empty when the stage had none.
std::string make_feedback(const kjudge::v1::Result& result, const std::string& detail);

}  // namespace kj
