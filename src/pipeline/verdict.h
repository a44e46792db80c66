// Where verdicts are decided. Every stage hands its raw outcome here; this file alone maps
// outcomes to verdicts, in the precedence of design §6/§7:
//   sandbox failure (INFRA_ERROR) > memory (MEMORY_LIMIT) > time / output limit > seccomp kill
//   (RUNTIME_ERROR naming the system call) > signal > exit code / API error > correctness > OK.
// The sandbox reports one Outcome already in that order (an OOM kill wins over the wall limit).
#pragma once

#include <optional>
#include <string>

#include "kjsandbox/report.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/runner.pb.h"

namespace kj {

// A sandboxed step as seen from outside: the sandbox's report and, when the step ran
// kjudge-runner and it left a report, that report.
struct StepOutcome {
  kjsandbox::Report sandbox;
  std::optional<kjudge::v1::RunnerReport> runner;
};

struct Decision {
  kjudge::v1::Verdict verdict;
  std::string message;
};

enum class Party { Candidate, Reference };

// nullopt: the build succeeded. A failing candidate build is COMPILE_ERROR (also when it hits a
// limit: template bombs are the candidate's fault); a failing reference is INVALID_JOB.
std::optional<Decision> decide_build(const StepOutcome& step, Party who);

// nullopt: the run finished and the runner reported success.
std::optional<Decision> decide_run(const StepOutcome& step, Party who, std::uint32_t wall_limit_ms);

// After every input set was compared.
Decision decide_correctness(const google::protobuf::RepeatedPtrField<kjudge::v1::CorrectnessSet>& sets);

std::string signal_name(int sig);

}  // namespace kj
