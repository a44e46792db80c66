#include <gtest/gtest.h>

#include "pipeline/verdict/compile_diagnostics.h"
#include "pipeline/verdict/verdict.h"

namespace {

// Real compiler output, as the native build's sandbox produced it (paths under /job/).
constexpr const char* kGcc =
    "/job/kernel.cpp: In function 'void vector_add(const float*, const float*, float*, int64_t)':\n"
    "/job/kernel.cpp:5:58: error: 'bias' was not declared in this scope\n"
    "    5 |   for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i] + bias\n"
    "      |                                                          ^~~~\n";
constexpr const char* kNvcc =
    "/job/kernel.cu(12): warning #177-D: variable \"unused\" was declared but never referenced\n"
    "/job/kernel.cu(14): error: identifier \"bias\" is undefined\n"
    "1 error detected in the compilation of \"/job/kernel.cu\".\n";
constexpr const char* kClangFatal = "<source>:3:10: fatal error: 'missing.h' file not found\n";

TEST(CompileDiagnostics, GccErrorWithColumn) {
  const auto e = kj::first_compile_error(kGcc);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "kernel.cpp");
  EXPECT_EQ(e->line, 5);
  EXPECT_EQ(e->column, 58);
  EXPECT_EQ(kj::describe(*e), "error at kernel.cpp:5:58: 'bias' was not declared in this scope");
}

TEST(CompileDiagnostics, NvccErrorSkipsWarnings) {
  const auto e = kj::first_compile_error(kNvcc);
  ASSERT_TRUE(e);
  EXPECT_EQ(kj::describe(*e), "error at kernel.cu:14: identifier \"bias\" is undefined");
}

TEST(CompileDiagnostics, FatalErrorWithoutSandboxPath) {
  const auto e = kj::first_compile_error(kClangFatal);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->file, "<source>");
  EXPECT_EQ(e->line, 3);
  EXPECT_EQ(e->text, "'missing.h' file not found");
}

TEST(CompileDiagnostics, NoErrorLine) {
  EXPECT_FALSE(kj::first_compile_error("collect2: ld returned 1 exit status\n"));
  EXPECT_FALSE(kj::first_compile_error(""));
}

TEST(CompileDiagnostics, SandboxPrefixGoesOnlyWherePathsStart) {
  EXPECT_EQ(kj::without_sandbox_paths(kNvcc).find("/job/"), std::string::npos);
  EXPECT_EQ(kj::without_sandbox_paths("in \"/job/kernel.cu\" and /usr/job/x (/job/y)"),
            "in \"kernel.cu\" and /usr/job/x (y)");
}

TEST(CompileDiagnostics, FailedBuildMessageNamesTheFirstError) {
  kj::StepOutcome step;
  step.sandbox.outcome = kjsandbox::Outcome::Exited;
  step.sandbox.exit_code = 1;
  const auto d = kj::decide_build(step, kj::Party::Candidate, kGcc);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->verdict, kjudge::v1::COMPILE_ERROR);
  EXPECT_EQ(d->message, "candidate does not compile: error at kernel.cpp:5:58: 'bias' was not declared in this scope");
  // without a diagnostic (a linker failure) the exit code is all there is to say
  EXPECT_EQ(kj::decide_build(step, kj::Party::Candidate, "ld: cannot find -lfoo\n")->message,
            "candidate does not compile (exit code 1)");
}

}  // namespace
