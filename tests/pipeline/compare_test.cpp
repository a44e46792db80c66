#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pipeline/checks/compare.h"

namespace {
using kjudge::v1::F32;

std::span<const std::byte> bytes(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

TEST(Compare, EqualTensorsPass) {
  std::vector<float> a{1, 2, 3}, b{1, 2, 3};
  auto c = kj::compare_tensor(F32, bytes(a), bytes(b), kj::default_tolerance(F32));
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.mismatches(), 0u);
  EXPECT_EQ(c.first_mismatch_index(), -1);
  EXPECT_EQ(c.elements(), 3u);
}

TEST(Compare, ReportsFirstMismatchAndErrors) {
  std::vector<float> e{1, 2, 3, 4}, a{1, 2, 3.5f, 5};
  auto c = kj::compare_tensor(F32, bytes(e), bytes(a), kj::default_tolerance(F32));
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatches(), 2u);
  EXPECT_EQ(c.first_mismatch_index(), 2);
  EXPECT_DOUBLE_EQ(c.max_abs_error(), 1.0);
  EXPECT_DOUBLE_EQ(c.max_rel_error(), 0.25);
}

TEST(Compare, ToleranceIsScaleAware) {
  // 1e-4 off on values of magnitude 1000 is within fp32 tolerance; the same offset on 1.0 is not
  std::vector<float> e{1000.f, 1.0f}, a{1000.001f, 1.0f}, a2{1000.f, 1.001f};
  EXPECT_TRUE(kj::compare_tensor(F32, bytes(e), bytes(a), kj::default_tolerance(F32)).passed());
  EXPECT_FALSE(kj::compare_tensor(F32, bytes(e), bytes(a2), {0, 0}).passed());
}

TEST(Compare, NaNPoisonIsAMismatchButExpectedNaNMatches) {
  std::vector<float> e{1, NAN}, a{NAN, NAN};
  auto c = kj::compare_tensor(F32, bytes(e), bytes(a), kj::default_tolerance(F32));
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatches(), 1u);
  EXPECT_EQ(c.first_mismatch_index(), 0);
  EXPECT_NE(c.problem().find("NaN"), std::string::npos);
}

TEST(Compare, InfinityMustMatchExactly) {
  std::vector<float> e{INFINITY, 1}, a{-INFINITY, 1}, a2{INFINITY, 1};
  EXPECT_FALSE(kj::compare_tensor(F32, bytes(e), bytes(a), kj::default_tolerance(F32)).passed());
  EXPECT_TRUE(kj::compare_tensor(F32, bytes(e), bytes(a2), kj::default_tolerance(F32)).passed());
}

TEST(Compare, SizeMismatchIsReportedNotCrashed) {
  std::vector<float> e{1, 2, 3}, a{1, 2};
  auto c = kj::compare_tensor(F32, bytes(e), bytes(a), kj::default_tolerance(F32));
  EXPECT_FALSE(c.passed());
  EXPECT_NE(c.problem().find("bytes"), std::string::npos);
}

TEST(Compare, IntegersCompareExactly) {
  std::vector<int> e{1, 2}, a{1, 3};
  auto c = kj::compare_tensor(kjudge::v1::I32, std::as_bytes(std::span(e)), std::as_bytes(std::span(a)),
                              kj::default_tolerance(kjudge::v1::I32));
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatches(), 1u);
}

}  // namespace
