// How the CLI shows a Result: one summary line (verdict and key figures), the feedback, or JSON
// in protobuf's own JSON mapping.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"

namespace kj::cli {

std::string summary_line(const kjudge::v1::Result& r);
std::string text_view(const kjudge::v1::Result& r);  // summary + message + feedback
// The Result in protobuf's JSON mapping, except 64-bit integers as numbers (not strings).
std::string json_view(const kjudge::v1::Result& r);
// KernelBench's own result JSON (compiled, correctness, metadata, runtime, runtime_stats,
// ref_runtime, ref_runtime_stats), so existing analysis scripts read kjudge's output unchanged.
// KernelBench folds several failures into "not compiled"; here only COMPILE_ERROR is, and
// metadata.kjudge_status keeps the precise verdict.
std::string kernelbench_view(const kjudge::v1::Result& r);
nlohmann::json kernelbench_record(const kjudge::v1::Result& r);
// KernelBench's batch file (eval_results.json): {"<problem_id>": [{"sample_id", "compiled",
// "correctness", "metadata", "runtime", "runtime_stats"}, ...]}. problem_id and sample_id come
// from the result's client_meta (set by --meta; the CLI puts the task's problem id there); a
// result without them is keyed by its job id, samples numbered in order.
nlohmann::json kernelbench_eval_results(const std::vector<kjudge::v1::Result>& results);

}  // namespace kj::cli
