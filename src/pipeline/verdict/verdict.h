// Where verdicts are decided. Every stage hands its raw outcome here; this file alone maps
// outcomes to verdicts, in the precedence of design §6/§7:
//   sandbox failure (INFRA_ERROR) > memory (MEMORY_LIMIT) > time / output limit > seccomp kill
//   (RUNTIME_ERROR naming the system call) > signal > exit code / API error > correctness > OK.
// The sandbox reports one Outcome already in that order (an OOM kill wins over the wall limit).
// After the run, checks return Findings (evidence and the verdict it argues for) and
// final_verdict alone weighs them, for both pipelines and both modes. Failures that end a job early
// (a fault of the node, a bad job, a cancel) are built here too (node_fault, job_fault, ...), and
// every verdict reaches the Result through record_verdict.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kjsandbox/report.h"
#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/runner.pb.h"
#include "pipeline/run/steps.h"
#include "pipeline/verdict/legality_facts.h"

namespace kj {

struct Decision {
  kjudge::v1::Verdict verdict;
  std::string message;
};

enum class Party { Candidate, Reference };

// The verdict into the Result: its status and message (a CHEAT's class was set with its evidence).
void record_verdict(kjudge::v1::Result& r, const Decision& d);

// Failures that end a job before any finding is weighed, by whose they are: the node's (INFRA_ERROR,
// retried), the job's (INVALID_JOB), the job's cancel or deadline (CANCELLED, EXPIRED).
Decision node_fault(std::string message);
Decision job_fault(std::string message);
Decision ended_by_cancel(std::string message);
Decision ended_by_deadline(std::string message);

// Whether a verdict scores the candidate or blames the job's reference: all but success, the
// node's faults and the job's cancel or deadline (nobody's fault).
bool blames_a_party(kjudge::v1::Verdict v);
// A build failure other nodes may replay: the candidate's (or reference's) own, never ours
// (INFRA_ERROR) nor the job's cancel or deadline.
bool shareable_build_failure(const Decision& d);
// Such a failure replayed from the store: the verdict its builder decided (COMPILE_ERROR when the
// stored number names none).
Decision replayed_build_failure(int stored_verdict, std::string message);

// --- Findings: what a check saw and the verdict it argues for; final_verdict weighs them ---

// Where a finding comes from, in final_verdict's precedence (an earlier kind wins):
//   Tamper       before the comparison: patched guards, late writes, threads left running, a
//                replayed output, requests on the channel the harness never makes. Such work makes
//                any output meaningless, so it outranks a wrong one.
//   Correctness  an output differs from the reference's.
//   Integrity    after a correct comparison: inputs written, audited calls, the timing report, the
//                daemon's clock, side streams, the roofline.
//   Legality     the traced pass: framework compute, library kernels, no custom work. A memoizing
//                candidate that skips its kernel on a cached call is a memoization cheat first.
enum class FindingKind { Tamper, Correctness, Integrity, Legality };

struct Finding {
  FindingKind kind;
  kjudge::v1::Verdict verdict;  // the verdict it argues for
  std::string message;          // the evidence, as the Result's message gives it
};
using Findings = std::vector<Finding>;

// CHEAT evidence of class `c`; the class goes on `r` at once, like the flags a check sets.
Finding cheat_evidence(FindingKind kind, kjudge::v1::Result& r, kjudge::v1::CheatClass c, std::string message);
// An integrity figure that does not add up (a forged report, time outside the measured region): SUSPICIOUS.
Finding suspicious_evidence(std::string message);
// Outputs that are wrong although the comparison passed (an audited call): INCORRECT.
Finding wrong_output_evidence(FindingKind kind, std::string message);

enum class JudgeMode { Strict, Compat };
JudgeMode judge_mode(const kjudge::v1::Job& job);

// The verdict of everything found after the run; no finding: OK. Precedence: the earlier
// FindingKind wins; within a kind, the first finding (each check stops at its first). The mode does
// not change the verdict: compat mode only goes on timing a candidate that an integrity or legality
// finding names (findings_end_the_job), so KernelBench's own numbers can be reported beside it.
Decision final_verdict(const Findings& findings, JudgeMode mode);

// Whether the pipeline stops at these findings. Strict: at any. Compat: at tamper or a wrong output
// only; an integrity or legality finding still has the candidate timed.
bool findings_end_the_job(const Findings& findings, JudgeMode mode);

// Native jobs: a SUSPICIOUS finding from the daemon's clock alone stands only when every one of
// this many runs of the candidate disagrees. A cheat that spends time outside the measured region
// does so in every run; a loaded host (the runner preempted between calls) stretches runs at
// random, two in a row on a busy node. The verdict and figures are the run's that agreed, so
// cheating in only some runs gains nothing.
inline constexpr int kClockConfirmingRuns = 3;

// Whether the candidate runs again after `runs_done` runs, the last ending in `f` (`r` its
// Result): a SUSPICIOUS finding from the daemon's clock alone, before kClockConfirmingRuns runs.
bool needs_confirming_run(const Finding& f, const kjudge::v1::Result& r, int runs_done);

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

// After every input set was compared: the first wrong output, or nullopt.
std::optional<Finding> correctness_finding(
    const google::protobuf::RepeatedPtrField<kjudge::v1::CorrectnessSet>& sets);
// The comparison's verdict alone: final_verdict of correctness_finding.
Decision decide_correctness(const google::protobuf::RepeatedPtrField<kjudge::v1::CorrectnessSet>& sets);

std::string signal_name(int sig);

// A TrivialTask's one command: nullopt when no sandbox ran (bench/throughput: OK).
Decision decide_trivial(const std::optional<kjsandbox::Report>& ran);

// --- KernelBench-format jobs (the Python harness's roles; see kernelbench/pipeline.cpp) ---

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

// The legality trace, classified (kernelbench/legality.h; its facts: legality_facts.h): a Legality finding. Precedence: a broken
// tracer (UNVERIFIABLE, fail closed) > framework compute (FALLBACK) > library kernels when the task
// does not allow them (FALLBACK) > no custom work at all (DECOY).
std::optional<Finding> decide_legality(const LegalityTrace& trace, const LegalityClass& cls, bool libraries_allowed);

}  // namespace kj
