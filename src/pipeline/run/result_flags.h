// A legality flag on the result, once. Its users sit above it: the timing layer (a loop's own
// notes, the daemon's clock overruling the events), the checks and both pipelines; it lives down
// here so that none of them reaches sideways or up for it.
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

void add_flag(kjudge::v1::Result& r, const std::string& flag);

}  // namespace kj
