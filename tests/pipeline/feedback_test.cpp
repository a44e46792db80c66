#include <gtest/gtest.h>

#include "pipeline/feedback.h"

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

}  // namespace
