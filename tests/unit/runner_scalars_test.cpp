// kjudge-runner scalars: each dtype's C representation, and values a dtype cannot hold.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "runner/cl_errors.h"
#include "runner/error.h"
#include "runner/scalars.h"

namespace {

namespace v1 = kjudge::v1;
using kjudge::runner::make_scalar;
using kjudge::runner::RunnerError;

v1::ScalarValue integer(v1::DType dt, std::int64_t i) {
  v1::ScalarValue v;
  v.set_dtype(dt);
  v.set_i(i);
  return v;
}

v1::ScalarValue floating(v1::DType dt, double f) {
  v1::ScalarValue v;
  v.set_dtype(dt);
  v.set_f(f);
  return v;
}

template <typename T>
T as(const kjudge::runner::Scalar& s) {
  EXPECT_EQ(s.size, sizeof(T));
  T v{};
  std::memcpy(&v, s.data(), sizeof(T));
  return v;
}

TEST(RunnerScalars, EachDtypeHasItsCType) {
  EXPECT_EQ(as<std::int8_t>(make_scalar("a", integer(v1::I8, -5), 0)), -5);
  EXPECT_EQ(as<std::int16_t>(make_scalar("a", integer(v1::I16, -30000), 0)), -30000);
  EXPECT_EQ(as<std::int32_t>(make_scalar("a", integer(v1::I32, INT32_MIN), 0)), INT32_MIN);
  EXPECT_EQ(as<std::int64_t>(make_scalar("a", integer(v1::I64, INT64_MIN), 0)), INT64_MIN);
  EXPECT_EQ(as<std::uint8_t>(make_scalar("a", integer(v1::U8, 255), 0)), 255);
  EXPECT_EQ(as<std::uint32_t>(make_scalar("a", integer(v1::U32, 4000000000), 0)), 4000000000u);
  EXPECT_EQ(as<std::uint8_t>(make_scalar("a", integer(v1::BOOL, 1), 0)), 1);
  EXPECT_EQ(as<float>(make_scalar("a", floating(v1::F32, 1.5), 0)), 1.5f);
  EXPECT_EQ(as<double>(make_scalar("a", floating(v1::F64, -2.25), 0)), -2.25);
}

TEST(RunnerScalars, CrossKindValuesConvertWhenExact) {
  EXPECT_EQ(as<float>(make_scalar("a", integer(v1::F32, 3), 0)), 3.0f);
  EXPECT_EQ(as<std::int64_t>(make_scalar("a", floating(v1::I64, 1048576.0), 0)), 1048576);
  EXPECT_THROW(make_scalar("a", floating(v1::I32, 1.5), 0), RunnerError);
}

TEST(RunnerScalars, RejectsWhatTheDtypeCannotHold) {
  EXPECT_THROW(make_scalar("a", integer(v1::I8, 128), 0), RunnerError);
  EXPECT_THROW(make_scalar("a", integer(v1::U8, -1), 0), RunnerError);
  EXPECT_THROW(make_scalar("a", integer(v1::U32, 1LL << 32), 0), RunnerError);
  EXPECT_THROW(make_scalar("a", integer(v1::BOOL, 2), 0), RunnerError);
  EXPECT_THROW(make_scalar("a", integer(v1::F16, 1), 0), RunnerError);
  v1::ScalarValue unset;
  unset.set_dtype(v1::I32);
  EXPECT_THROW(make_scalar("a", unset, 0), RunnerError);
}

TEST(RunnerClErrors, CodesHaveNames) {
  using kjudge::runner::cl_error_name;
  EXPECT_EQ(cl_error_name(CL_SUCCESS), "CL_SUCCESS");
  EXPECT_EQ(cl_error_name(CL_INVALID_KERNEL_ARGS), "CL_INVALID_KERNEL_ARGS");
  EXPECT_EQ(cl_error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(cl_error_name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
  EXPECT_EQ(cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(cl_error_name(-9999), "CL_ERROR(-9999)");
  try {
    kjudge::runner::cl_check(CL_INVALID_WORK_GROUP_SIZE, "clEnqueueNDRangeKernel");
    FAIL();
  } catch (const RunnerError& e) {
    EXPECT_STREQ(e.what(), "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE");
  }
}

}  // namespace
