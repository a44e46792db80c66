#include <gtest/gtest.h>

#include <vector>

#include "pipeline/timing/stats.h"

TEST(Stats, MedianMeanMinP90) {
  std::vector<double> t{5, 1, 3, 2, 4};
  auto s = kj::timing_stats(t, "steady_clock");
  EXPECT_DOUBLE_EQ(s.median_ms(), 3);
  EXPECT_DOUBLE_EQ(s.mean_ms(), 3);
  EXPECT_DOUBLE_EQ(s.min_ms(), 1);
  EXPECT_NEAR(s.p90_ms(), 4.6, 1e-12);
  EXPECT_NEAR(s.std_ms(), 1.5811388300841898, 1e-12);
  EXPECT_EQ(s.trials(), 5u);
  EXPECT_EQ(s.method(), "steady_clock");
}

TEST(Stats, EvenCountMedianInterpolates) {
  std::vector<double> t{1, 2, 3, 10};
  EXPECT_DOUBLE_EQ(kj::timing_stats(t, "x").median_ms(), 2.5);
}

TEST(Stats, EmptyIsZeroTrials) {
  auto s = kj::timing_stats({}, "x");
  EXPECT_EQ(s.trials(), 0u);
  EXPECT_EQ(s.median_ms(), 0);
}
