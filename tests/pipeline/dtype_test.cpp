#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pipeline/job/dtype.h"

namespace {
using namespace kjudge::v1;

TEST(DType, Sizes) {
  EXPECT_EQ(kj::dtype_size(F32), 4u);
  EXPECT_EQ(kj::dtype_size(F16), 2u);
  EXPECT_EQ(kj::dtype_size(BF16), 2u);
  EXPECT_EQ(kj::dtype_size(I64), 8u);
  EXPECT_EQ(kj::dtype_size(DTYPE_UNSPECIFIED), 0u);
}

TEST(DType, HalfRoundTripsRepresentableValues) {
  std::vector<std::byte> buf(2);
  for (double v : {0.0, 1.0, -2.5, std::ldexp(1.0, -14), std::ldexp(1.0, -24), 65504.0, 0.333251953125}) {
    kj::dtype_store(F16, buf.data(), 0, v);
    EXPECT_DOUBLE_EQ(kj::dtype_load(F16, buf.data(), 0), v) << v;
  }
  kj::dtype_store(F16, buf.data(), 0, 1e6);  // overflow → inf
  EXPECT_TRUE(std::isinf(kj::dtype_load(F16, buf.data(), 0)));
}

TEST(DType, Bf16RoundsToNearest) {
  std::vector<std::byte> buf(2);
  kj::dtype_store(BF16, buf.data(), 0, 1.0);
  EXPECT_DOUBLE_EQ(kj::dtype_load(BF16, buf.data(), 0), 1.0);
  kj::dtype_store(BF16, buf.data(), 0, 3.14159);
  EXPECT_NEAR(kj::dtype_load(BF16, buf.data(), 0), 3.14159, 0.02);
}

TEST(DType, IntegersStoreExactly) {
  std::vector<std::byte> buf(8);
  kj::dtype_store(I64, buf.data(), 0, -123456789.0);
  EXPECT_EQ(kj::dtype_load(I64, buf.data(), 0), -123456789.0);
}

}  // namespace
