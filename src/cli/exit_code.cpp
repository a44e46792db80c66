#include "cli/exit_code.h"

namespace kj::cli {

namespace v1 = kjudge::v1;

int exit_code_for(v1::Verdict v) {
  switch (v) {
    case v1::OK: return kExitOk;
    case v1::COMPILE_ERROR: return kExitCompileError;
    case v1::RUNTIME_ERROR:
    case v1::CUDA_FAULT:
    case v1::TIMEOUT:
    case v1::MEMORY_LIMIT:
    case v1::OUTPUT_LIMIT:
    case v1::INCORRECT: return kExitCandidateFailed;
    case v1::FALLBACK:
    case v1::DECOY:
    case v1::CHEAT:
    case v1::SUSPICIOUS:
    case v1::UNVERIFIABLE: return kExitRuleViolated;
    case v1::INVALID_JOB:
    case v1::CANCELLED:
    case v1::EXPIRED: return kExitNotJudged;
    default: return kExitInfraError;  // INFRA_ERROR, and a verdict this CLI does not know
  }
}

}  // namespace kj::cli
