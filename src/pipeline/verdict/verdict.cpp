#include "pipeline/verdict/verdict.h"

#include "pipeline/verdict/compile_diagnostics.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace kj {
namespace v1 = kjudge::v1;
using kjsandbox::Outcome;

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

void record_verdict(v1::Result& r, const Decision& d) {
  r.set_status(d.verdict);
  r.set_message(d.message);
}

Decision node_fault(std::string message) { return {v1::INFRA_ERROR, std::move(message)}; }
Decision job_fault(std::string message) { return {v1::INVALID_JOB, std::move(message)}; }
Decision ended_by_cancel(std::string message) { return {v1::CANCELLED, std::move(message)}; }
Decision ended_by_deadline(std::string message) { return {v1::EXPIRED, std::move(message)}; }

namespace {
bool nobodys_fault(v1::Verdict v) { return v == v1::INFRA_ERROR || v == v1::CANCELLED || v == v1::EXPIRED; }
}  // namespace

bool blames_a_party(v1::Verdict v) { return v != v1::OK && v != v1::VERDICT_UNSPECIFIED && !nobodys_fault(v); }

bool shareable_build_failure(const Decision& d) { return !nobodys_fault(d.verdict); }

Decision replayed_build_failure(int stored_verdict, std::string message) {
  const auto v = v1::Verdict_IsValid(stored_verdict) ? static_cast<v1::Verdict>(stored_verdict) : v1::COMPILE_ERROR;
  return {v, std::move(message)};
}

Finding cheat_evidence(FindingKind kind, v1::Result& r, v1::CheatClass c, std::string message) {
  r.set_cheat_class(c);
  return {kind, v1::CHEAT, std::move(message)};
}

Finding suspicious_evidence(std::string message) { return {FindingKind::Integrity, v1::SUSPICIOUS, std::move(message)}; }

Finding wrong_output_evidence(FindingKind kind, std::string message) { return {kind, v1::INCORRECT, std::move(message)}; }

JudgeMode judge_mode(const v1::Job& job) {
  return job.options().strictness() == v1::COMPAT_KERNELBENCH ? JudgeMode::Compat : JudgeMode::Strict;
}

Decision final_verdict(const Findings& findings, JudgeMode /*mode: never changes the verdict*/) {
  const Finding* first = nullptr;
  for (const auto& f : findings)
    if (!first || f.kind < first->kind) first = &f;
  if (!first) return {v1::OK, "correct on every input set"};
  return {first->verdict, first->message};
}

bool findings_end_the_job(const Findings& findings, JudgeMode mode) {
  for (const auto& f : findings)
    if (mode == JudgeMode::Strict || f.kind == FindingKind::Tamper || f.kind == FindingKind::Correctness) return true;
  return false;
}

bool needs_confirming_run(const Finding& f, const v1::Result& r, int runs_done) {
  const auto& flags = r.legality().flags();
  const bool clock_only = std::find(flags.begin(), flags.end(), "outside_clock_disagrees") != flags.end();
  return f.verdict == v1::SUSPICIOUS && clock_only && runs_done < kClockConfirmingRuns;
}

namespace {

const char* party_name(Party who) { return who == Party::Candidate ? "candidate" : "reference"; }

// The party's device could not be set up (driver init, a context) before any of its code was
// loaded: the node's fault, whatever the party is.
Decision gpu_unavailable(Party who, const std::string& cause) {
  return gpu_could_not_serve(fmt::format("the GPU could not start the {}: {}", party_name(who), cause));
}

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

// The judge's faults, before anything that would blame a party.
std::optional<Decision> decide_infra(const StepOutcome& step, const char* what) {
  if (step.sandbox.outcome == Outcome::SetupFailed)
    return Decision{v1::INFRA_ERROR, fmt::format("{} sandbox failed: {}", what, step.sandbox.error)};
  if (step.host_fault && step.sandbox.outcome != Outcome::Cancelled)
    return Decision{v1::INFRA_ERROR, fmt::format("host fault during the {}: {}", what, *step.host_fault)};
  return std::nullopt;
}

}  // namespace

std::optional<Decision> decide_build(const StepOutcome& step, Party who, const std::string& log) {
  const auto& s = step.sandbox;
  if (auto d = decide_infra(step, "build")) return d;
  switch (s.outcome) {
    case Outcome::SetupFailed: break;  // decide_infra
    case Outcome::Cancelled: return Decision{v1::CANCELLED, "cancelled while building"};
    case Outcome::WallTimeout:
      return blame(who, v1::COMPILE_ERROR,
                   s.wall_extension_seconds > 0
                       ? fmt::format("{} build exceeded its time limit (and {:.0f} s more for a loaded node)",
                                     party_name(who), s.wall_extension_seconds)
                       : fmt::format("{} build exceeded its time limit", party_name(who)));
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
  const auto first_error = first_compile_error(log);
  // An OpenCL build runs on the device: one that could not get the device or a context is the node's.
  if (step.runner && !step.runner->ok() && step.runner->device_unavailable() && !step.device_ready_mark)
    return gpu_unavailable(who, step.runner->error());
  if (step.runner && !step.runner->ok())
    return blame(who, v1::COMPILE_ERROR, fmt::format("{} does not build: {}", party_name(who),
                                                     first_error ? describe(*first_error) : step.runner->error()));
  if (s.exit_code != 0)
    return blame(who, v1::COMPILE_ERROR,
                 first_error ? fmt::format("{} does not compile: {}", party_name(who), describe(*first_error))
                             : fmt::format("{} does not compile (exit code {})", party_name(who), s.exit_code));
  return std::nullopt;
}

bool is_cuda_fault(std::string_view error) {
  // Device faults (sticky: the context is lost), in the driver's names (native runner) and in the
  // runtime's words (PyTorch's "CUDA error: ..."). API misuse and out-of-memory are not faults.
  static constexpr std::string_view kFaults[] = {
      "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ASSERT",
      "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_ADDRESS_SPACE",
      "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_LAUNCH_FAILED", "illegal memory access", "misaligned address",
      "device-side assert", "illegal instruction", "unspecified launch failure", "hardware stack error",
      "invalid program counter"};
  for (auto f : kFaults)
    if (error.find(f) != std::string_view::npos) return true;
  return false;
}

Decision gpu_could_not_serve(const std::string& message) {
  record_gpu_unavailable(message);
  return node_fault(message);
}

std::optional<Decision> decide_gpu_still_healthy() {
  if (!job_gpu_quarantined()) return std::nullopt;
  return node_fault("this job's GPU was quarantined while the job was being built: retried on a healthy GPU");
}

std::optional<Decision> decide_run(const StepOutcome& step, Party who, std::uint32_t wall_limit_ms) {
  const auto& s = step.sandbox;
  if (auto d = decide_infra(step, "run")) return d;
  switch (s.outcome) {
    case Outcome::SetupFailed: break;  // decide_infra
    case Outcome::Cancelled: return Decision{v1::CANCELLED, "cancelled while running"};
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
  if (step.runner && !step.runner->ok()) {
    if (step.runner->device_unavailable() && !step.device_ready_mark) return gpu_unavailable(who, step.runner->error());
    if (is_cuda_fault(step.runner->error()))
      return blame(who, v1::CUDA_FAULT, fmt::format("{} hit a CUDA fault: {}", party_name(who), step.runner->error()));
    return blame(who, v1::RUNTIME_ERROR, fmt::format("{} failed: {}", party_name(who), step.runner->error()));
  }
  if (s.exit_code != 0 || !step.runner)
    // exiting from inside the kernel, or killing the harness's report, is a runtime error too
    return blame(who, v1::RUNTIME_ERROR,
                 fmt::format("{} exited with code {} without a complete run", party_name(who), s.exit_code));
  return std::nullopt;
}

std::optional<Finding> correctness_finding(const google::protobuf::RepeatedPtrField<v1::CorrectnessSet>& sets) {
  for (const auto& set : sets) {
    if (set.passed()) continue;
    for (const auto& o : set.outputs()) {
      if (o.passed()) continue;
      std::string what;  // how much, in one line: "all 16384 elements NaN" reads differently from "3 of 16384"
      if (o.elements())
        what = fmt::format(" ({} of {} elements wrong{})", o.mismatches(), o.elements(),
                           o.nan_outputs() ? fmt::format(", {} NaN", o.nan_outputs()) : std::string());
      else if (!o.problem().empty())
        what = ": " + o.problem();
      return wrong_output_evidence(
          FindingKind::Correctness,
          fmt::format("output '{}' differs from the reference on input set '{}'{}", o.arg(), set.name(), what));
    }
    return wrong_output_evidence(FindingKind::Correctness, fmt::format("input set '{}' failed", set.name()));
  }
  return std::nullopt;
}

Decision decide_trivial(const std::optional<kjsandbox::Report>& ran) {
  if (ran && ran->outcome == Outcome::SetupFailed) return node_fault("sandbox setup failed: " + ran->error);
  if (!ran || ran->ok()) return {v1::OK, ""};
  return {v1::RUNTIME_ERROR, fmt::format("command ended with {} (exit {}, signal {})", kjsandbox::to_string(ran->outcome),
                                         ran->exit_code, ran->signal)};
}

Decision decide_correctness(const google::protobuf::RepeatedPtrField<v1::CorrectnessSet>& sets) {
  const auto wrong = correctness_finding(sets);
  return final_verdict(wrong ? Findings{*wrong} : Findings{}, JudgeMode::Strict);
}

namespace {

// A message's one line of a harness error; the full text goes to feedback.
constexpr std::size_t kCauseChars = 400;

v1::CheatClass cheat_class_named(const std::string& name) {
  static const std::pair<const char*, v1::CheatClass> names[] = {
      {"stream", v1::CHEAT_STREAM},         {"deferred", v1::CHEAT_DEFERRED},     {"lazy_output", v1::CHEAT_LAZY_OUTPUT},
      {"timer_patch", v1::CHEAT_TIMER_PATCH}, {"forgery", v1::CHEAT_FORGERY},     {"tamper", v1::CHEAT_TAMPER},
      {"interference", v1::CHEAT_INTERFERENCE}, {"memoization", v1::CHEAT_MEMOIZATION}};
  for (const auto& [n, c] : names)
    if (name == n) return c;
  return v1::CHEAT_TAMPER;
}

}  // namespace

std::optional<Decision> decide_harness(const kjsandbox::Report& s, const nlohmann::json* report, Party who, bool build,
                                       std::uint32_t wall_limit_ms, const std::optional<std::string>& host_fault,
                                       bool device_ready_mark) {
  const StepOutcome step{s, std::nullopt, host_fault};
  if (auto d = decide_infra(step, build ? "build" : "run")) return d;
  if (s.outcome != Outcome::Exited || s.exit_code != 0 || !report) {
    auto d = build ? decide_build(step, who) : decide_run(step, who, wall_limit_ms);
    if (d) return d;
    return blame(who, build ? v1::COMPILE_ERROR : v1::RUNTIME_ERROR,
                 fmt::format("{} exited without a report", party_name(who)));
  }
  if (report->value("ok", false)) return std::nullopt;
  const std::string error = report->value("error", std::string("no error text"));
  const std::string stage = report->value("stage", std::string("?"));
  // The harness's one-line cause (python/kjudge_harness/diagnosis.py) when it made one: a
  // traceback's last line can be the tail of a tensor printout, a build's is ninja's.
  const std::string cause = report->contains("message") ? last_line(report->value("message", ""), kCauseChars)
                                                        : last_line(error, kCauseChars);
  if (build) return blame(who, v1::COMPILE_ERROR, fmt::format("{} does not build: {}", party_name(who), cause));
  if (stage == "device" && !device_ready_mark) return gpu_unavailable(who, cause);
  if (is_cuda_fault(error))
    return blame(who, v1::CUDA_FAULT, fmt::format("{} hit a CUDA fault ({}): {}", party_name(who), stage, cause));
  return blame(who, v1::RUNTIME_ERROR, fmt::format("{} failed ({}): {}", party_name(who), stage, cause));
}

std::optional<Decision> decide_static_policy(const nlohmann::json& policy, v1::Result& result) {
  const auto it = policy.find("reject");
  if (it == policy.end() || !it->is_object()) return std::nullopt;
  const auto& f = *it;
  const std::string verdict = f.value("verdict", std::string("CHEAT"));
  v1::Verdict v = v1::CHEAT;
  if (!v1::Verdict_Parse(verdict, &v) || v == v1::OK || v == v1::VERDICT_UNSPECIFIED) v = v1::CHEAT;
  if (v == v1::CHEAT) result.set_cheat_class(cheat_class_named(f.value("cheat_class", std::string("tamper"))));
  return Decision{v, fmt::format("static policy rule '{}' (line {}): {}", f.value("rule", std::string("?")),
                                 f.value("line", 0), f.value("message", std::string()))};
}

std::optional<Finding> decide_legality(const LegalityTrace& trace, const LegalityClass& cls, bool libraries_allowed) {
  const auto illegal = [](v1::Verdict v, std::string message) { return Finding{FindingKind::Legality, v, std::move(message)}; };
  if (!trace.tracer_ok) return illegal(v1::UNVERIFIABLE, "the legality trace could not be trusted: " + trace.tracer_problem);
  if (!cls.forbidden_ops.empty()) {
    std::string ops;
    for (std::size_t i = 0; i < cls.forbidden_ops.size() && i < 6; ++i) ops += (i ? ", " : "") + cls.forbidden_ops[i];
    return illegal(v1::FALLBACK, "framework compute ran inside ModelNew.forward: " + ops);
  }
  if (cls.library_kernels > 0 && !libraries_allowed)
    return illegal(v1::FALLBACK, fmt::format("library kernels ran ({}): this task asks for custom kernels",
                                             cls.library_kernel_names.empty() ? "" : cls.library_kernel_names[0]));
  const bool custom = trace.profiled_kernels ? (cls.custom_kernels > 0 || cls.custom_ops > 0)
                                             : (trace.ext_calls > 0 || cls.custom_ops > 0);
  if (!custom)
    return illegal(v1::DECOY, trace.profiled_kernels ? "no custom kernel ran during ModelNew.forward"
                                                     : "ModelNew.forward never called the candidate's own extension");
  return std::nullopt;
}

}  // namespace kj
