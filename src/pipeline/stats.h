// Summary statistics of timed trials.
#pragma once

#include <span>
#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

kjudge::v1::TimingStats timing_stats(std::span<const double> trial_ms, const std::string& method);

}  // namespace kj
