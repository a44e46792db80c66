#include <gtest/gtest.h>

#include "pipeline/verdict/feedback.h"

namespace {
namespace v1 = kjudge::v1;

TEST(Feedback, CompileExcerptPicksErrorLines) {
  const std::string log =
      "In file included from x.h:1:\n"
      "kernel.cpp: In function 'void f()':\n"
      "kernel.cpp:3:5: error: 'y' was not declared in this scope\n"
      "    3 |     y = 1;\n"
      "      |     ^\n"
      "kernel.cpp:9:1: warning: unused\n";
  const auto ex = kj::compile_log_excerpt(log);
  EXPECT_NE(ex.find("error: 'y' was not declared"), std::string::npos);
  EXPECT_NE(ex.find("y = 1;"), std::string::npos);
  EXPECT_EQ(ex.find("warning"), std::string::npos);
}

TEST(Feedback, MismatchSummaryNamesSetOutputAndIndexButNoValues) {
  v1::Result r;
  r.set_status(v1::INCORRECT);
  auto* s = r.add_correctness();
  s->set_name("declared");
  auto* o = s->add_outputs();
  o->set_arg("out");
  o->set_elements(100);
  o->set_mismatches(7);
  o->set_first_mismatch_index(42);
  o->set_max_abs_error(0.5);
  const auto f = kj::make_feedback(r, "");
  EXPECT_NE(f.find("'declared'"), std::string::npos);
  EXPECT_NE(f.find("'out'"), std::string::npos);
  EXPECT_NE(f.find("7 of 100"), std::string::npos);
  EXPECT_NE(f.find("42"), std::string::npos);
}

// An all-NaN output: counted, its worst elements named with the class of the expected value, and
// no "max abs error 0" (the error figures cover finite elements only).
TEST(Feedback, AllNanOutputIsCountedNeverErrorZero) {
  v1::Result r;
  r.set_status(v1::INCORRECT);
  for (const char* name : {"declared", "signed"}) {
    auto* s = r.add_correctness();
    s->set_name(name);
    auto* o = s->add_outputs();
    o->set_arg("output");
    o->set_elements(64);
    o->set_mismatches(64);
    o->set_nan_outputs(64);
    auto* w = o->add_worst();
    w->set_position("[0, 0]");
    w->set_got("nan");
    w->set_expected("a negative number");
  }
  const auto f = kj::make_feedback(r, "");
  EXPECT_NE(f.find("Wrong output on 2 of 2 input sets"), std::string::npos) << f;
  EXPECT_NE(f.find("64 elements are NaN in your output"), std::string::npos) << f;
  EXPECT_NE(f.find("[0, 0] got nan, expected a negative number"), std::string::npos) << f;
  EXPECT_NE(f.find("Also wrong on: 'signed' (64 of 64 wrong)"), std::string::npos) << f;
  EXPECT_EQ(f.find("max abs error"), std::string::npos) << f;
}

TEST(Feedback, FiniteMismatchesReportTheirErrors) {
  v1::Result r;
  r.set_status(v1::INCORRECT);
  auto* o = r.add_correctness()->add_outputs();
  o->set_elements(10);
  o->set_mismatches(2);
  o->set_max_abs_error(0.25);
  const auto f = kj::make_feedback(r, "");
  EXPECT_NE(f.find("max abs error 0.25"), std::string::npos) << f;
  // with the worst elements' values listed, the max error would give an expected value away
  auto* w = o->add_worst();
  w->set_position("[3]");
  w->set_got("1.25");
  w->set_expected("a positive number");
  const auto g = kj::make_feedback(r, "");
  EXPECT_NE(g.find("[3] got 1.25, expected a positive number"), std::string::npos) << g;
  EXPECT_EQ(g.find("max abs error"), std::string::npos) << g;
}

// A stage's own repair text replaces the raw compile log.
TEST(Feedback, CompileErrorUsesTheHarnessText) {
  v1::Result r;
  r.set_status(v1::COMPILE_ERROR);
  r.mutable_compile()->set_log("ninja: build stopped: subcommand failed.\n");
  const auto f = kj::make_feedback(r, "candidate.py:11:3: error: 'x' was not declared in this scope");
  EXPECT_EQ(f, "Compilation failed:\ncandidate.py:11:3: error: 'x' was not declared in this scope");
}

}  // namespace

namespace {
TEST(Feedback, NativeCrashNamesWhatTheSignalUsuallyMeans) {
  v1::Result r;
  r.set_status(v1::RUNTIME_ERROR);
  r.set_message("candidate crashed: killed by SIGSEGV");
  EXPECT_EQ(kj::make_feedback(r, ""),
            "candidate crashed: killed by SIGSEGV. An invalid memory access: a null, dangling or out-of-bounds "
            "pointer, or a write to an input.");
  r.set_message("candidate crashed: killed by SIGFPE");
  EXPECT_NE(kj::make_feedback(r, "").find("division or remainder by zero"), std::string::npos);
  r.set_message("candidate exited with code 3");  // no signal: nothing is guessed
  EXPECT_EQ(kj::make_feedback(r, ""), "candidate exited with code 3.");
}

TEST(Feedback, OneNanElementIsSingular) {
  v1::Result r;
  r.set_status(v1::INCORRECT);
  auto* o = r.add_correctness()->add_outputs();
  r.mutable_correctness(0)->set_name("declared");
  o->set_arg("out");
  o->set_elements(8);
  o->set_mismatches(1);
  o->set_nan_outputs(1);
  EXPECT_NE(kj::make_feedback(r, "").find(" 1 element is NaN in your output."), std::string::npos);
}
}  // namespace
