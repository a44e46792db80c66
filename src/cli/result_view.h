// How the CLI shows a Result: one summary line (verdict and key figures), the feedback, or JSON
// in protobuf's own JSON mapping.
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj::cli {

std::string summary_line(const kjudge::v1::Result& r);
std::string text_view(const kjudge::v1::Result& r);  // summary + message + feedback
std::string json_view(const kjudge::v1::Result& r);
// KernelBench's own result JSON (compiled, correctness, metadata, runtime, runtime_stats,
// ref_runtime, ref_runtime_stats), so existing analysis scripts read kjudge's output unchanged.
// KernelBench folds several failures into "not compiled"; here only COMPILE_ERROR is, and
// metadata.kjudge_status keeps the precise verdict.
std::string kernelbench_view(const kjudge::v1::Result& r);

}  // namespace kj::cli
