#include <gtest/gtest.h>

#include <csignal>

#include "pipeline/sandbox_watch.h"
#include "pipeline/verdict.h"

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
