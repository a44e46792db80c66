#include <gtest/gtest.h>

#include "pipeline/kernelbench/roofline.h"

namespace {
using nlohmann::json;

kjudge::v1::Performance timed(double median_ms) {
  kjudge::v1::Performance p;
  p.mutable_candidate()->set_median_ms(median_ms);
  return p;
}

TEST(KernelBenchRoofline, MemoryBoundProblemUsesBandwidth) {
  // 19_ReLU at shipped size: 2 x 6.44 GB, no FLOPs counted (elementwise), 3000 GB/s measured
  auto p = timed(5.0);
  kj::set_roofline(p, {{"bytes", 12.88e9}, {"flops", 0}, {"peak_gbps", 3000.0}, {"peak_tflops", 50.0}});
  EXPECT_NEAR(p.roofline_floor_ms(), 4.2933, 1e-3);
  EXPECT_NEAR(p.achieved_gbps(), 2576.0, 1e-6);
  EXPECT_NEAR(p.peak_fraction(), 4.2933 / 5.0, 1e-4);
  EXPECT_EQ(p.achieved_tflops(), 0.0);
}

TEST(KernelBenchRoofline, ComputeBoundProblemUsesTheLargerFloor) {
  // a 4096^3 matmul: 137.4 GFLOP, 201 MB moved; 50 TFLOP/s and 3000 GB/s measured
  auto p = timed(4.0);
  kj::set_roofline(p, {{"bytes", 201326592}, {"flops", 137438953472.0}, {"peak_gbps", 3000.0}, {"peak_tflops", 50.0}});
  EXPECT_NEAR(p.roofline_floor_ms(), 2.7488, 1e-3);  // FLOPs / peak, not bytes / bandwidth (0.067 ms)
  EXPECT_NEAR(p.achieved_tflops(), 34.36, 1e-2);
  EXPECT_NEAR(p.peak_fraction(), 0.6872, 1e-3);
  EXPECT_DOUBLE_EQ(p.peak_tflops(), 50.0);
}

TEST(KernelBenchRoofline, NothingWithoutAMedianOrUsableParts) {
  auto untimed = timed(0.0);
  kj::set_roofline(untimed, {{"bytes", 1e9}, {"peak_gbps", 3000.0}});
  EXPECT_EQ(untimed.peak_fraction(), 0.0);
  auto p = timed(1.0);
  kj::set_roofline(p, json());  // the cpu backend: no figures
  kj::set_roofline(p, {{"bytes", 1e9}, {"flops", nullptr}, {"peak_gbps", nullptr}, {"peak_tflops", nullptr}});
  EXPECT_EQ(p.roofline_floor_ms(), 0.0);
  EXPECT_EQ(p.peak_fraction(), 0.0);
}

}  // namespace
