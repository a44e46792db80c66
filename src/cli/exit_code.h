// `kjudge eval` and `kjudge wait` exit by verdict class, so scripts and CI can branch on the
// outcome without parsing output (1: the command itself failed; 3: no result; 4: queue full).
#pragma once

#include "kjudge/v1/verdict.pb.h"

namespace kj::cli {

enum ExitCode : int {
  kExitOk = 0,              // OK
  kExitCompileError = 10,   // COMPILE_ERROR
  kExitCandidateFailed = 11,  // RUNTIME_ERROR, CUDA_FAULT, TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, INCORRECT
  kExitRuleViolated = 12,   // FALLBACK, DECOY, CHEAT, SUSPICIOUS, UNVERIFIABLE
  kExitNotJudged = 13,      // INVALID_JOB, CANCELLED, EXPIRED
  kExitInfraError = 14,     // INFRA_ERROR: ours, never the candidate's
};

int exit_code_for(kjudge::v1::Verdict v);

}  // namespace kj::cli
