#include <gtest/gtest.h>

#include "pipeline/validate.h"

namespace {
namespace v1 = kjudge::v1;

v1::Job good_job() {
  v1::Job j;
  j.set_job_id("j-1");
  j.set_tenant("team-a");
  auto* t = j.mutable_native();
  t->set_language(v1::CPP);
  t->set_entry("vector_add");
  t->mutable_candidate()->set_text("extern \"C\" void vector_add() {}");
  t->mutable_reference_source()->set_text("extern \"C\" void vector_add() {}");
  auto* a = t->add_args();
  a->set_name("out");
  a->mutable_tensor()->set_dtype(v1::F32);
  a->mutable_tensor()->add_shape(16);
  a->mutable_tensor()->set_role(v1::OUT);
  return j;
}

std::string why(const v1::Job& j) {
  auto r = kj::validate_job(j, kj::LimitsConfig{});
  return r ? r->message : "";
}

TEST(Validate, AcceptsAWellFormedJob) { EXPECT_EQ(why(good_job()), ""); }

// protobuf's Timestamp/Duration arithmetic CHECK-fails (aborts kjudged) outside its range.
TEST(Validate, RejectsTimestampsProtobufCannotComputeWith) {
  for (auto [secs, nanos] : {std::pair<std::int64_t, int>{1ll << 40, 0}, {-(1ll << 40), 0}, {-1, 0},
                             {253402300800ll, 0}, {1, -1}, {1, 1'000'000'000}}) {
    auto j = good_job();
    j.mutable_submitted_at()->set_seconds(secs);
    j.mutable_submitted_at()->set_nanos(nanos);
    EXPECT_NE(why(j).find("submitted_at"), std::string::npos) << secs << " " << nanos;
    j = good_job();
    j.mutable_deadline()->set_seconds(secs);
    j.mutable_deadline()->set_nanos(nanos);
    EXPECT_NE(why(j).find("deadline"), std::string::npos) << secs << " " << nanos;
  }
  auto j = good_job();
  j.mutable_submitted_at()->set_seconds(1'764'000'000);
  j.mutable_deadline()->set_seconds(253402300799ll);
  EXPECT_EQ(why(j), "");
}

TEST(Validate, RejectsMissingOrBadIds) {
  auto j = good_job();
  j.clear_job_id();
  EXPECT_NE(why(j).find("job_id"), std::string::npos);
  j = good_job();
  j.set_job_id("has space");
  EXPECT_NE(why(j).find("job_id"), std::string::npos);
  j = good_job();
  j.set_tenant("UPPER");
  EXPECT_NE(why(j).find("tenant"), std::string::npos);
}

TEST(Validate, RejectsMissingTaskAndUnsupportedKinds) {
  auto j = good_job();
  j.clear_native();
  EXPECT_NE(why(j).find("no task"), std::string::npos);
  j = good_job();
  j.mutable_native()->set_language(v1::HIP);
  EXPECT_NE(why(j).find("not supported"), std::string::npos);
  j = good_job();
  j.mutable_kernelbench()->set_reference_py("x");
  EXPECT_NE(why(j).find("kernelbench"), std::string::npos);
}

TEST(Validate, RejectsBadArguments) {
  auto j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->set_role(v1::IN);
  EXPECT_NE(why(j).find("no OUT"), std::string::npos);
  j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->set_shape(0, -4);
  EXPECT_NE(why(j).find("positive"), std::string::npos);
  j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->set_shape(0, 1ll << 40);
  EXPECT_NE(why(j).find("too large"), std::string::npos);
  j = good_job();
  j.mutable_native()->add_args()->set_name("nothing");
  EXPECT_NE(why(j).find("neither"), std::string::npos);
}

TEST(Validate, RejectsDangerousCompileFlags) {
  for (const char* f : {"-fplugin=/tmp/x.so", "-wrapper", "@/etc/passwd", "-o/tmp/x", "-B/tmp"}) {
    auto j = good_job();
    j.mutable_native()->add_compile_flags(f);
    EXPECT_NE(why(j).find("not allowed"), std::string::npos) << f;
  }
  auto j = good_job();
  j.mutable_native()->add_compile_flags("-O3");
  j.mutable_native()->add_compile_flags("-march=native");
  EXPECT_EQ(why(j), "");
}

TEST(Validate, OpenCLNeedsALaunchGrid) {
  auto j = good_job();
  j.mutable_native()->set_language(v1::OPENCL);
  EXPECT_NE(why(j).find("global_size"), std::string::npos);
  j.mutable_native()->mutable_launch()->add_global_size(16);
  EXPECT_EQ(why(j), "");
}

TEST(Validate, LimitsAboveTheNodeMaximumAreRejected) {
  auto j = good_job();
  j.mutable_limits()->set_run_wall_ms(10'000'000);
  EXPECT_NE(why(j).find("run_wall_ms"), std::string::npos);
}

TEST(Decode, GarbageOversizedAndMissingPayloads) {
  kj::LimitsConfig lim;
  auto r = kj::decode_job(std::string("\xff\xff\xff garbage", 12), "team-a", lim);
  ASSERT_TRUE(std::holds_alternative<kj::InvalidJob>(r));
  EXPECT_NE(std::get<kj::InvalidJob>(r).message.find("not a valid"), std::string::npos);

  r = kj::decode_job(std::nullopt, "team-a", lim);
  EXPECT_NE(std::get<kj::InvalidJob>(r).message.find("no 'job' field"), std::string::npos);

  lim.max_job_bytes = 10;
  r = kj::decode_job(good_job().SerializeAsString(), "team-a", lim);
  EXPECT_NE(std::get<kj::InvalidJob>(r).message.find("over the"), std::string::npos);
}

TEST(Decode, TenantMustMatchTheStream) {
  auto r = kj::decode_job(good_job().SerializeAsString(), "team-b", kj::LimitsConfig{});
  ASSERT_TRUE(std::holds_alternative<kj::InvalidJob>(r));
  EXPECT_NE(std::get<kj::InvalidJob>(r).message.find("does not match"), std::string::npos);
  r = kj::decode_job(good_job().SerializeAsString(), "team-a", kj::LimitsConfig{});
  EXPECT_TRUE(std::holds_alternative<v1::Job>(r));
}

}  // namespace
