#include <gtest/gtest.h>

#include <csignal>

#include "pipeline/checks/engine_checks.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/verdict/verdict.h"

namespace {
namespace v1 = kjudge::v1;
using kjsandbox::Outcome;
using kj::Party;

kj::StepOutcome step(Outcome o, int code = 0, int sig = 0, std::optional<bool> runner_ok = true) {
  kj::StepOutcome s;
  s.sandbox.outcome = o;
  s.sandbox.exit_code = code;
  s.sandbox.signal = sig;
  if (runner_ok) {
    v1::RunnerReport r;
    r.set_ok(*runner_ok);
    r.set_error("clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES");
    s.runner = r;
  }
  return s;
}

TEST(Verdict, RunOutcomesMapInPrecedenceOrder) {
  EXPECT_FALSE(kj::decide_run(step(Outcome::Exited), Party::Candidate, 1000));
  EXPECT_EQ(kj::decide_run(step(Outcome::SetupFailed), Party::Candidate, 1000)->verdict, v1::INFRA_ERROR);
  EXPECT_EQ(kj::decide_run(step(Outcome::WallTimeout), Party::Candidate, 1000)->verdict, v1::TIMEOUT);
  EXPECT_EQ(kj::decide_run(step(Outcome::OutputLimit), Party::Candidate, 1000)->verdict, v1::OUTPUT_LIMIT);
  auto sig = kj::decide_run(step(Outcome::Signaled, 0, SIGSEGV), Party::Candidate, 1000);
  EXPECT_EQ(sig->verdict, v1::RUNTIME_ERROR);
  EXPECT_NE(sig->message.find("SIGSEGV"), std::string::npos);
  auto api = kj::decide_run(step(Outcome::Exited, 1, 0, false), Party::Candidate, 1000);
  EXPECT_EQ(api->verdict, v1::RUNTIME_ERROR);
  EXPECT_NE(api->message.find("CL_OUT_OF_RESOURCES"), std::string::npos);
  // a device fault reported by the native runner (the driver's error name) is its own verdict
  auto fault = step(Outcome::Exited, 1, 0, false);
  fault.runner->set_error("cuCtxSynchronize after the call failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(kj::decide_run(fault, Party::Candidate, 1000)->verdict, v1::CUDA_FAULT);
  EXPECT_EQ(kj::decide_run(fault, Party::Reference, 1000)->verdict, v1::INVALID_JOB);
  // exit(0) from inside the kernel leaves no report: not a success
  EXPECT_EQ(kj::decide_run(step(Outcome::Exited, 0, 0, std::nullopt), Party::Candidate, 1000)->verdict,
            v1::RUNTIME_ERROR);
}

TEST(Verdict, ReferenceFailuresAreTheJobsFaultButSandboxFailuresAreOurs) {
  EXPECT_EQ(kj::decide_run(step(Outcome::Signaled, 0, SIGSEGV), Party::Reference, 1000)->verdict, v1::INVALID_JOB);
  EXPECT_EQ(kj::decide_run(step(Outcome::SetupFailed), Party::Reference, 1000)->verdict, v1::INFRA_ERROR);
  EXPECT_EQ(kj::decide_build(step(Outcome::Exited, 1, 0, std::nullopt), Party::Reference)->verdict, v1::INVALID_JOB);
}

TEST(Verdict, BuildFailuresAreCompileErrors) {
  EXPECT_FALSE(kj::decide_build(step(Outcome::Exited, 0, 0, std::nullopt), Party::Candidate));
  EXPECT_EQ(kj::decide_build(step(Outcome::Exited, 1, 0, std::nullopt), Party::Candidate)->verdict, v1::COMPILE_ERROR);
  EXPECT_EQ(kj::decide_build(step(Outcome::WallTimeout), Party::Candidate)->verdict, v1::COMPILE_ERROR);
  auto extended = step(Outcome::WallTimeout);  // past its limit and the time granted for a loaded node
  extended.sandbox.wall_extension_seconds = 120;
  const auto late = kj::decide_build(extended, Party::Candidate);
  EXPECT_EQ(late->verdict, v1::COMPILE_ERROR);
  EXPECT_NE(late->message.find("and 120 s more for a loaded node"), std::string::npos) << late->message;
  EXPECT_EQ(kj::decide_build(step(Outcome::Exited, 1, 0, false), Party::Candidate)->verdict, v1::COMPILE_ERROR);
  EXPECT_EQ(kj::decide_build(step(Outcome::SetupFailed), Party::Candidate)->verdict, v1::INFRA_ERROR);
}

TEST(Verdict, CorrectnessNeedsEverySet) {
  google::protobuf::RepeatedPtrField<v1::CorrectnessSet> sets;
  sets.Add()->set_passed(true);
  EXPECT_EQ(kj::decide_correctness(sets).verdict, v1::OK);
  auto* bad = sets.Add();
  bad->set_name("signed");
  auto* o = bad->add_outputs();
  o->set_arg("out");
  EXPECT_EQ(kj::decide_correctness(sets).verdict, v1::INCORRECT);
  EXPECT_NE(kj::decide_correctness(sets).message.find("signed"), std::string::npos);
  o->set_elements(64);
  o->set_mismatches(64);
  o->set_nan_outputs(64);  // how much, in the one line: an all-NaN output says so
  EXPECT_NE(kj::decide_correctness(sets).message.find("(64 of 64 elements wrong, 64 NaN)"), std::string::npos)
      << kj::decide_correctness(sets).message;
}

TEST(Verdict, MemoryLimitAndSeccompKill) {
  EXPECT_EQ(kj::decide_run(step(Outcome::MemoryLimit), Party::Candidate, 1000)->verdict, v1::MEMORY_LIMIT);
  EXPECT_EQ(kj::decide_run(step(Outcome::MemoryLimit), Party::Reference, 1000)->verdict, v1::INVALID_JOB);
  auto s = step(Outcome::SeccompViolation);
  s.sandbox.seccomp_syscall = 101;
  s.sandbox.seccomp_syscall_name = "ptrace";
  s.sandbox.seccomp_arch = "x86_64";
  auto d = kj::decide_run(s, Party::Candidate, 1000);
  EXPECT_EQ(d->verdict, v1::RUNTIME_ERROR);
  EXPECT_NE(d->message.find("ptrace (x86_64 #101)"), std::string::npos) << d->message;
  EXPECT_EQ(kj::decide_build(step(Outcome::MemoryLimit), Party::Candidate)->verdict, v1::COMPILE_ERROR);
  EXPECT_EQ(kj::decide_build(s, Party::Candidate)->verdict, v1::COMPILE_ERROR);
}

}  // namespace

// Issue 14: what the host did (a full filesystem, a job dir the judge cannot write) is never a
// party's verdict, even when the step's own outcome would blame it.
TEST(Verdict, HostFaultsAreInfraErrorsForEitherParty) {
  auto faulted = [](kj::StepOutcome s) {
    s.host_fault = "the job's filesystem is full";
    return s;
  };
  const auto failed_build = faulted(step(Outcome::Exited, 1, 0, std::nullopt));
  const auto failed_run = faulted(step(Outcome::Signaled, 0, SIGSEGV));
  for (auto who : {Party::Candidate, Party::Reference}) {
    auto b = kj::decide_build(failed_build, who);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->verdict, v1::INFRA_ERROR);
    EXPECT_NE(b->message.find("filesystem is full"), std::string::npos) << b->message;
    EXPECT_EQ(kj::decide_run(failed_run, who, 1000)->verdict, v1::INFRA_ERROR);
    EXPECT_EQ(kj::decide_harness(failed_run.sandbox, nullptr, who, true, 1000, failed_run.host_fault)->verdict,
              v1::INFRA_ERROR);
  }
  // a cancel still wins: the job was stopped on purpose
  EXPECT_EQ(kj::decide_run(faulted(step(Outcome::Cancelled)), Party::Candidate, 1000)->verdict, v1::CANCELLED);
}

// A run whose device could not be set up (no context: the GPU's memory is gone, the driver is
// broken) before any job code loaded is the node's fault, and the job's GPU gets a health check.
// The claim is believed only without the device-ready mark: job code runs after that mark, so it
// cannot take it back and turn its own failure into an INFRA_ERROR.
TEST(Verdict, ADeviceThatCannotBeSetUpIsTheNodesFaultUnlessItsReadyMarkArrived) {
  for (auto who : {Party::Candidate, Party::Reference}) {
    kj::SandboxWatch watch;
    kj::SandboxWatchScope scope(&watch);
    auto no_context = step(Outcome::Exited, 1, 0, false);
    no_context.runner->set_error("cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY");
    no_context.runner->set_device_unavailable(true);
    auto d = kj::decide_run(no_context, who, 1000);
    EXPECT_EQ(d->verdict, v1::INFRA_ERROR);
    EXPECT_NE(d->message.find("could not start"), std::string::npos) << d->message;
    EXPECT_EQ(watch.gpu_unavailable, 1u);
    no_context.device_ready_mark = true;  // the device was set up: a forged claim, judged as usual
    EXPECT_NE(kj::decide_run(no_context, who, 1000)->verdict, v1::INFRA_ERROR);
    EXPECT_EQ(watch.gpu_unavailable, 1u);
    // an OpenCL build runs on the device too
    auto no_cl_context = step(Outcome::Exited, 1, 0, false);
    no_cl_context.runner->set_error("clCreateContext failed: CL_OUT_OF_HOST_MEMORY");
    no_cl_context.runner->set_device_unavailable(true);
    EXPECT_EQ(kj::decide_build(no_cl_context, who, "")->verdict, v1::INFRA_ERROR);
    EXPECT_EQ(watch.gpu_unavailable, 2u);
    no_cl_context.runner->set_device_unavailable(false);
    EXPECT_NE(kj::decide_build(no_cl_context, who, "")->verdict, v1::INFRA_ERROR);  // its build's failure
    EXPECT_EQ(watch.gpu_unavailable, 2u);
  }
  kj::SandboxWatch watch;
  kj::SandboxWatchScope scope(&watch);
  kjsandbox::Report exited;
  exited.outcome = Outcome::Exited;  // a role that fails writes its report and exits 0
  exited.exit_code = 0;
  const nlohmann::json report = {{"ok", false}, {"stage", "device"}, {"error", "RuntimeError: CUDA error: out of memory"}};
  EXPECT_EQ(kj::decide_harness(exited, &report, Party::Candidate, false, 1000, std::nullopt, false)->verdict,
            v1::INFRA_ERROR);
  EXPECT_EQ(watch.gpu_unavailable, 1u);
  EXPECT_EQ(kj::decide_harness(exited, &report, Party::Candidate, false, 1000, std::nullopt, true)->verdict,
            v1::RUNTIME_ERROR);
  EXPECT_EQ(watch.gpu_unavailable, 1u);
}

// --- final_verdict: the one precedence over what the checks found, for both pipelines and modes ---

namespace findings {
using kj::Finding;
using kj::FindingKind;
using kj::JudgeMode;

Finding tamper() { return {FindingKind::Tamper, v1::CHEAT, "threads left running"}; }
Finding wrong_output() { return {FindingKind::Correctness, v1::INCORRECT, "output 'out' differs"}; }
Finding integrity_cheat() { return {FindingKind::Integrity, v1::CHEAT, "inputs modified"}; }
Finding audit_wrong() { return {FindingKind::Integrity, v1::INCORRECT, "timed call 1 returned wrong outputs"}; }
Finding suspicious() { return {FindingKind::Integrity, v1::SUSPICIOUS, "below the physical floor"}; }
Finding fallback() { return {FindingKind::Legality, v1::FALLBACK, "framework compute ran"}; }
Finding decoy() { return {FindingKind::Legality, v1::DECOY, "no custom kernel ran"}; }
Finding unverifiable() { return {FindingKind::Legality, v1::UNVERIFIABLE, "the trace could not be trusted"}; }

constexpr JudgeMode kModes[] = {JudgeMode::Strict, JudgeMode::Compat};

}  // namespace findings

TEST(FinalVerdict, NothingFoundIsOkInEitherMode) {
  for (auto mode : findings::kModes) {
    const auto d = kj::final_verdict({}, mode);
    EXPECT_EQ(d.verdict, v1::OK);
    EXPECT_EQ(d.message, "correct on every input set");
    EXPECT_FALSE(kj::findings_end_the_job({}, mode));
  }
}

TEST(FinalVerdict, SuspiciousIsItsOwnVerdictWithItsEvidence) {
  for (auto mode : findings::kModes) {
    const auto d = kj::final_verdict({findings::suspicious()}, mode);
    EXPECT_EQ(d.verdict, v1::SUSPICIOUS);
    EXPECT_EQ(d.message, "below the physical floor");
  }
}

// The precedence table, the same in both modes (compat only keeps timing; the verdict is the
// finding's). Tamper beats a wrong output: work behind the comparison's back makes any output
// meaningless. A wrong output beats integrity evidence: those checks run only after a correct
// comparison. Integrity beats legality, whichever was found first: a memoizing candidate that
// skips its kernel on a cached call is a memoization cheat first. Within a kind the first found
// stands: each check stops at its first (a wrong audited call is INCORRECT unless its output is
// another call's answer).
TEST(FinalVerdict, PrecedenceTable) {
  using namespace findings;
  const struct {
    kj::Findings found;
    v1::Verdict verdict;
    const char* message;
  } cases[] = {
      {{integrity_cheat(), fallback()}, v1::CHEAT, "inputs modified"},
      {{fallback(), integrity_cheat()}, v1::CHEAT, "inputs modified"},
      {{decoy(), suspicious()}, v1::SUSPICIOUS, "below the physical floor"},
      {{unverifiable(), audit_wrong()}, v1::INCORRECT, "timed call 1 returned wrong outputs"},
      {{fallback()}, v1::FALLBACK, "framework compute ran"},
      {{decoy()}, v1::DECOY, "no custom kernel ran"},
      {{unverifiable()}, v1::UNVERIFIABLE, "the trace could not be trusted"},
      {{wrong_output(), tamper()}, v1::CHEAT, "threads left running"},
      {{integrity_cheat(), wrong_output()}, v1::INCORRECT, "output 'out' differs"},
      {{suspicious(), wrong_output(), fallback()}, v1::INCORRECT, "output 'out' differs"},
      {{fallback(), suspicious(), wrong_output(), tamper()}, v1::CHEAT, "threads left running"},
      {{audit_wrong(), integrity_cheat()}, v1::INCORRECT, "timed call 1 returned wrong outputs"},
      {{integrity_cheat(), audit_wrong()}, v1::CHEAT, "inputs modified"},
      {{fallback(), decoy()}, v1::FALLBACK, "framework compute ran"},
  };
  for (const auto& c : cases)
    for (auto mode : kModes) {
      const auto d = kj::final_verdict(c.found, mode);
      EXPECT_EQ(d.verdict, c.verdict) << c.message;
      EXPECT_EQ(d.message, c.message);
    }
}

// Compat mode goes on timing a candidate that an integrity or legality finding names (KernelBench's
// own numbers beside kjudge's verdict); strict mode stops at the first finding.
TEST(FinalVerdict, CompatKeepsTimingAfterIntegrityOrLegalityFindingsStrictStops) {
  using namespace findings;
  for (const auto& f : {integrity_cheat(), suspicious(), audit_wrong(), fallback(), decoy(), unverifiable()}) {
    EXPECT_TRUE(kj::findings_end_the_job({f}, JudgeMode::Strict)) << f.message;
    EXPECT_FALSE(kj::findings_end_the_job({f}, JudgeMode::Compat)) << f.message;
  }
  EXPECT_FALSE(kj::findings_end_the_job({integrity_cheat(), fallback()}, JudgeMode::Compat));
  for (auto mode : kModes) {
    EXPECT_TRUE(kj::findings_end_the_job({tamper()}, mode));
    EXPECT_TRUE(kj::findings_end_the_job({wrong_output()}, mode));
  }
}

TEST(FinalVerdict, EvidenceHelpersArgueForTheirVerdicts) {
  v1::Result r;
  const auto cheat = kj::cheat_evidence(kj::FindingKind::Tamper, r, v1::CHEAT_DEFERRED, "late write");
  EXPECT_EQ(cheat.verdict, v1::CHEAT);
  EXPECT_EQ(cheat.kind, kj::FindingKind::Tamper);
  EXPECT_EQ(r.cheat_class(), v1::CHEAT_DEFERRED);
  EXPECT_EQ(kj::suspicious_evidence("x").kind, kj::FindingKind::Integrity);
  EXPECT_EQ(kj::suspicious_evidence("x").verdict, v1::SUSPICIOUS);
  EXPECT_EQ(kj::wrong_output_evidence(kj::FindingKind::Integrity, "x").verdict, v1::INCORRECT);
  google::protobuf::RepeatedPtrField<v1::CorrectnessSet> sets;
  sets.Add()->set_passed(true);
  EXPECT_FALSE(kj::correctness_finding(sets));
  sets.Add()->set_name("signed");
  ASSERT_TRUE(kj::correctness_finding(sets));
  EXPECT_EQ(kj::correctness_finding(sets)->kind, kj::FindingKind::Correctness);
}

// Native jobs: only a SUSPICIOUS verdict from the daemon's clock alone is run again before it
// stands, until 3 runs in all have disagreed.
TEST(FinalVerdict, OnlyAClockOnlySuspicionIsConfirmedByUpToThreeRuns) {
  v1::Result r;
  EXPECT_FALSE(kj::needs_confirming_run(findings::suspicious(), r, 1));
  r.mutable_legality()->add_flags("outside_clock_disagrees");
  EXPECT_EQ(kj::kClockConfirmingRuns, 3);
  EXPECT_TRUE(kj::needs_confirming_run(findings::suspicious(), r, 1));
  EXPECT_TRUE(kj::needs_confirming_run(findings::suspicious(), r, 2));
  EXPECT_FALSE(kj::needs_confirming_run(findings::suspicious(), r, 3));  // every run disagreed: it stands
  EXPECT_FALSE(kj::needs_confirming_run(findings::integrity_cheat(), r, 1));
}

TEST(FinalVerdict, EarlyEndsAndWhoseFaultTheyAre) {
  EXPECT_EQ(kj::node_fault("x").verdict, v1::INFRA_ERROR);
  EXPECT_EQ(kj::job_fault("x").verdict, v1::INVALID_JOB);
  EXPECT_EQ(kj::ended_by_cancel("x").verdict, v1::CANCELLED);
  EXPECT_EQ(kj::ended_by_deadline("x").verdict, v1::EXPIRED);
  for (auto v : {v1::OK, v1::INFRA_ERROR, v1::CANCELLED, v1::EXPIRED, v1::VERDICT_UNSPECIFIED})
    EXPECT_FALSE(kj::blames_a_party(v)) << v1::Verdict_Name(v);
  for (auto v : {v1::CHEAT, v1::SUSPICIOUS, v1::INCORRECT, v1::COMPILE_ERROR, v1::INVALID_JOB, v1::FALLBACK})
    EXPECT_TRUE(kj::blames_a_party(v)) << v1::Verdict_Name(v);
  EXPECT_FALSE(kj::shareable_build_failure(kj::node_fault("x")));
  EXPECT_FALSE(kj::shareable_build_failure(kj::ended_by_cancel("x")));
  EXPECT_FALSE(kj::shareable_build_failure(kj::ended_by_deadline("x")));
  EXPECT_TRUE(kj::shareable_build_failure({v1::COMPILE_ERROR, "x"}));
  EXPECT_EQ(kj::replayed_build_failure(v1::CHEAT, "x").verdict, v1::CHEAT);
  EXPECT_EQ(kj::replayed_build_failure(9999, "x").verdict, v1::COMPILE_ERROR);
  v1::Result r;
  kj::record_verdict(r, kj::job_fault("bad reference"));
  EXPECT_EQ(r.status(), v1::INVALID_JOB);
  EXPECT_EQ(r.message(), "bad reference");
}

// One daemon-clock check, each pipeline choosing how far a report may run past the clock.
TEST(DaemonClock, ForgedReportSlackIsTheCallersChoice) {
  kj::ClockCheck native{100.0, 140.0, std::nullopt, {1.05, 1.0}};
  kj::ClockCheck kernelbench{100.0, 140.0, std::nullopt, {1.5, 50.0}};
  v1::Result r;
  const auto d = kj::check_daemon_clock(native, r);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, v1::SUSPICIOUS);
  EXPECT_EQ(d->kind, kj::FindingKind::Integrity);
  r.Clear();
  EXPECT_FALSE(kj::check_daemon_clock(kernelbench, r));
  kernelbench.span_ms.reset();  // marks missing: SUSPICIOUS whatever the slack
  EXPECT_EQ(kj::check_daemon_clock(kernelbench, r)->verdict, v1::SUSPICIOUS);
}

TEST(LastLine, TheLastNonBlankLineCutWhenAsked) {
  EXPECT_EQ(kj::last_line("Traceback:\n  frame\nValueError: bad\n \n"), "ValueError: bad");
  EXPECT_EQ(kj::last_line("one line"), "one line");
  EXPECT_EQ(kj::last_line(" \n"), "");
  EXPECT_EQ(kj::last_line("x\nabcdef", 3), "abc...");
}
