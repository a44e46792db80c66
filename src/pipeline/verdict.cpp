#include "pipeline/verdict.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>

namespace kj {
namespace v1 = kjudge::v1;
using kjsandbox::Outcome;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

namespace {

const char* party_name(Party who) { return who == Party::Candidate ? "candidate" : "reference"; }

// Reference failures are the job's fault (bad reference), except when the sandbox itself failed.
Decision blame(Party who, v1::Verdict candidate_verdict, std::string message) {
  if (who == Party::Reference)
    return {v1::INVALID_JOB, fmt::format("the reference failed, so the job cannot be judged: {}", message)};
  return {candidate_verdict, std::move(message)};
}

// "ptrace (x86_64 #101)".
std::string seccomp_call(const kjsandbox::Report& s) {
  if (s.seccomp_syscall < 0) return s.seccomp_syscall_name.empty() ? "unknown" : s.seccomp_syscall_name;
  return fmt::format("{} ({} #{})", s.seccomp_syscall_name, s.seccomp_arch, s.seccomp_syscall);
}

}  // namespace

std::optional<Decision> decide_build(const StepOutcome& step, Party who) {
  const auto& s = step.sandbox;
  switch (s.outcome) {
    case Outcome::SetupFailed: return Decision{v1::INFRA_ERROR, "build sandbox failed: " + s.error};
    case Outcome::WallTimeout:
      return blame(who, v1::COMPILE_ERROR, fmt::format("{} build exceeded its time limit", party_name(who)));
    case Outcome::OutputLimit:
      return blame(who, v1::COMPILE_ERROR, fmt::format("{} build produced too much output", party_name(who)));
    case Outcome::MemoryLimit:
      return blame(who, v1::COMPILE_ERROR, fmt::format("{} build exceeded its memory limit", party_name(who)));
    case Outcome::SeccompViolation:
      return blame(who, v1::COMPILE_ERROR, fmt::format("{} build made a forbidden system call: {}", party_name(who),
                                                       seccomp_call(s)));
    case Outcome::Signaled:
      return blame(who, v1::COMPILE_ERROR,
                   fmt::format("{} build was killed by {}", party_name(who), signal_name(s.signal)));
    case Outcome::Exited: break;
  }
  if (step.runner && !step.runner->ok())
    return blame(who, v1::COMPILE_ERROR, fmt::format("{} does not build: {}", party_name(who), step.runner->error()));
  if (s.exit_code != 0)
    return blame(who, v1::COMPILE_ERROR, fmt::format("{} does not compile (exit code {})", party_name(who), s.exit_code));
  return std::nullopt;
}

std::optional<Decision> decide_run(const StepOutcome& step, Party who, std::uint32_t wall_limit_ms) {
  const auto& s = step.sandbox;
  switch (s.outcome) {
    case Outcome::SetupFailed: return Decision{v1::INFRA_ERROR, "run sandbox failed: " + s.error};
    case Outcome::MemoryLimit:
      return blame(who, v1::MEMORY_LIMIT, fmt::format("{} exceeded its memory limit", party_name(who)));
    case Outcome::WallTimeout:
      return blame(who, v1::TIMEOUT, fmt::format("{} did not finish within {} ms", party_name(who), wall_limit_ms));
    case Outcome::OutputLimit:
      return blame(who, v1::OUTPUT_LIMIT, fmt::format("{} wrote more than the output limit", party_name(who)));
    case Outcome::SeccompViolation:
      return blame(who, v1::RUNTIME_ERROR,
                   fmt::format("{} made a forbidden system call: {}", party_name(who), seccomp_call(s)));
    case Outcome::Signaled:
      return blame(who, v1::RUNTIME_ERROR, fmt::format("{} crashed: killed by {}", party_name(who), signal_name(s.signal)));
    case Outcome::Exited: break;
  }
  if (step.runner && !step.runner->ok())
    return blame(who, v1::RUNTIME_ERROR, fmt::format("{} failed: {}", party_name(who), step.runner->error()));
  if (s.exit_code != 0 || !step.runner)
    // exiting from inside the kernel, or killing the harness's report, is a runtime error too
    return blame(who, v1::RUNTIME_ERROR,
                 fmt::format("{} exited with code {} without a complete run", party_name(who), s.exit_code));
  return std::nullopt;
}

Decision decide_correctness(const google::protobuf::RepeatedPtrField<v1::CorrectnessSet>& sets) {
  for (const auto& set : sets) {
    if (set.passed()) continue;
    for (const auto& o : set.outputs()) {
      if (o.passed()) continue;
      return {v1::INCORRECT,
              fmt::format("output '{}' differs from the reference on input set '{}'", o.arg(), set.name())};
    }
    return {v1::INCORRECT, fmt::format("input set '{}' failed", set.name())};
  }
  return {v1::OK, "correct on every input set"};
}

}  // namespace kj
