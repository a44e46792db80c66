// Where verdicts are decided. Every stage hands its raw outcome here; this file alone maps
// outcomes to verdicts, in the precedence of design §6/§7:
//   sandbox failure (INFRA_ERROR) > memory (MEMORY_LIMIT) > time / output limit > seccomp kill
//   (RUNTIME_ERROR naming the system call) > signal > exit code / API error > correctness > OK.
// The sandbox reports one Outcome already in that order (an OOM kill wins over the wall limit).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kjsandbox/report.h"
#include "pipeline/kernelbench_legality.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/runner.pb.h"

namespace kj {

// A sandboxed step as seen from outside: the sandbox's report and, when the step ran
// kjudge-runner and it left a report, that report. host_fault: after a failed step, what the
// judge found wrong with the host (pipeline/host_fault.h); it outranks every candidate verdict.
// device_ready_mark: the role's device-ready byte (runner/clock_marks.h) reached the daemon's clock
// socket. Job code cannot take it back: a role that says its device could not be set up is believed
// only without it.
struct StepOutcome {
  kjsandbox::Report sandbox;
  std::optional<kjudge::v1::RunnerReport> runner;
  std::optional<std::string> host_fault;
  bool device_ready_mark = false;
};

struct Decision {
  kjudge::v1::Verdict verdict;
  std::string message;
};

enum class Party { Candidate, Reference };

// Every decide_* function: a sandbox that could not be set up, or a host fault found after the
// step (a full filesystem, a job dir the judge cannot write), is INFRA_ERROR for either party.

// nullopt: the build succeeded. A failing candidate build is COMPILE_ERROR (also when it hits a
// limit: template bombs are the candidate's fault); a failing reference is INVALID_JOB.
// `log`: the compiler's output; a failed compile's message names its first error and where.
std::optional<Decision> decide_build(const StepOutcome& step, Party who, const std::string& log = {});

// A device fault in an error text (CUDA_FAULT rather than RUNTIME_ERROR): the driver's names and
// PyTorch's wording both; API misuse and out-of-memory are not faults.
bool is_cuda_fault(std::string_view error);

// nullopt: the run finished and the runner reported success.
std::optional<Decision> decide_run(const StepOutcome& step, Party who, std::uint32_t wall_limit_ms);

// After every input set was compared.
Decision decide_correctness(const google::protobuf::RepeatedPtrField<kjudge::v1::CorrectnessSet>& sets);

std::string signal_name(int sig);

// --- KernelBench-format jobs (the Python harness's roles; see kernelbench_pipeline.cpp) ---

// The job's GPU could not serve it (no context, no device memory for the judge's own work): the
// node's fault. INFRA_ERROR (retried), and the GPU gets a health check (recorded in the job's
// SandboxWatch), so a GPU that can no longer serve is quarantined instead of failing every job.
Decision gpu_could_not_serve(const std::string& message);

// Before a job's first GPU work: if its GPU was quarantined while the job built, INFRA_ERROR, so it
// is retried on a healthy GPU instead of running on a broken one (and being blamed for it).
std::optional<Decision> decide_gpu_still_healthy();

// A harness role's end: the sandbox's report, then the role's own JSON report (ok/stage/error).
// nullopt: the role ran to the end. `build`: failures are COMPILE_ERROR rather than RUNTIME_ERROR.
// host_fault (HarnessStep::host_fault): INFRA_ERROR, whatever the role reported.
// device_ready_mark: the role's device-ready byte arrived (a failed "device" stage without it is
// the node's fault: INFRA_ERROR, and the job's GPU is checked).
std::optional<Decision> decide_harness(const kjsandbox::Report& sandbox, const nlohmann::json* report, Party who,
                                       bool build, std::uint32_t wall_limit_ms,
                                       const std::optional<std::string>& host_fault, bool device_ready_mark = true);

// The static policy's first reject finding (python/kjudge_harness/static_policy.py); sets the
// cheat class on `result` when the rule names one.
std::optional<Decision> decide_static_policy(const nlohmann::json& policy, kjudge::v1::Result& result);

// The legality trace, classified (kernelbench_legality.h). Precedence: a broken tracer
// (UNVERIFIABLE, fail closed) > framework compute (FALLBACK) > library kernels when the task does
// not allow them (FALLBACK) > no custom work at all (DECOY).
std::optional<Decision> decide_legality(const LegalityTrace& trace, const LegalityClass& cls, bool libraries_allowed);

}  // namespace kj
