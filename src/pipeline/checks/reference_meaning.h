// Whether a native task's reference gives a candidate anything to be judged against: outputs with
// NaN/Inf on every input set, or the same outputs for different inputs, let any constant (or any
// NaN-writing kernel) pass. Either is the job's fault: INVALID_JOB, never a free OK. The
// KernelBench worker's twin is python/kjudge_worker/meaning.py.
#pragma once

#include <filesystem>
#include <optional>

#include "kjudge/v1/job.pb.h"
#include "pipeline/checks/engine_checks.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// ref_dir holds out<k>/arg<i>.bin of the reference's run for the first `sets` sets.
std::optional<Decision> decide_reference_meaning(const kjudge::v1::NativeTask& task, const std::filesystem::path& ref_dir,
                                                 unsigned sets, const InputDigests& inputs);

}  // namespace kj
