// A timed loop's report as the loop's process wrote it (python/kjudge_protocol/timing.py, in the
// candidate's harness or the trusted worker), read by the daemon: the process's own word, so a
// malformed field gives no figure, never an error.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"

namespace kj {

// The numbers in j[key] (a harness report's array); empty when absent.
std::vector<double> json_doubles(const nlohmann::json& j, const char* key);

// The loop's figures (median, mean, spread of trial_ms; KernelBench's own rounded figures in
// compat; the trials redone and the host's wait).
kjudge::v1::TimingStats stats_of(const nlohmann::json& timing);

}  // namespace kj
