#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/judge.h"
#include "pipeline/job/validate.h"

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

// proto3 keeps enum numbers it does not know; each must be INVALID_JOB, never judged as a default.
TEST(Validate, RejectsUnknownEnumValues) {
  auto j = good_job();
  j.mutable_options()->set_strictness(static_cast<v1::Strictness>(99));
  EXPECT_NE(why(j).find("options.strictness = 99"), std::string::npos) << why(j);
  j = good_job();
  j.mutable_native()->set_language(static_cast<v1::Language>(99));
  EXPECT_NE(why(j).find("native.language = 99"), std::string::npos) << why(j);
  j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->set_role(static_cast<v1::ArgRole>(99));
  EXPECT_NE(why(j).find("role 99"), std::string::npos) << why(j);
  v1::Job kb;
  kb.set_job_id("kb");
  kb.set_tenant("team-a");
  kb.mutable_kernelbench()->set_reference_py("class Model: pass");
  kb.mutable_kernelbench()->set_model_new_py("class ModelNew: pass");
  EXPECT_EQ(why(kb), "");
  kb.mutable_kernelbench()->set_backend(static_cast<v1::Backend>(99));
  EXPECT_NE(why(kb).find("kernelbench.backend = 99"), std::string::npos) << why(kb);
  kb.mutable_kernelbench()->set_backend(v1::BACKEND_CUDA);
  kb.mutable_kernelbench()->set_precision(static_cast<v1::Precision>(-3));
  EXPECT_NE(why(kb).find("kernelbench.precision = -3"), std::string::npos) << why(kb);
}

TEST(Validate, RejectsNaNAndNegativeTolerances) {
  for (auto [atol, rtol] : {std::pair{NAN, 1e-3}, {1e-3, NAN}, {-1.0, 1e-3}, {1e-3, -1e-9}, {INFINITY, 0.0}}) {
    auto j = good_job();
    j.mutable_options()->mutable_tolerance()->set_atol(atol);
    j.mutable_options()->mutable_tolerance()->set_rtol(rtol);
    EXPECT_NE(why(j).find("options.tolerance"), std::string::npos) << atol << " " << rtol;
  }
  auto j = good_job();
  j.mutable_options()->mutable_tolerance()->set_atol(0);
  j.mutable_options()->mutable_tolerance()->set_rtol(1e-2);
  EXPECT_EQ(why(j), "");
}

TEST(Validate, RejectsNonFiniteInputDistributions) {
  auto j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->mutable_distribution()->mutable_normal()->set_stddev(-1);
  EXPECT_NE(why(j).find("stddev"), std::string::npos);
  j = good_job();
  j.mutable_native()->mutable_args(0)->mutable_tensor()->mutable_distribution()->set_constant(NAN);
  EXPECT_NE(why(j).find("constant"), std::string::npos);
}

// The node's sandbox limits apply: a job asking for its own memory or CPU limit is told so.
TEST(Validate, RejectsMemoryAndCpuLimitsTheNodeDoesNotHonour) {
  auto j = good_job();
  j.mutable_limits()->set_memory_bytes(1);
  EXPECT_NE(why(j).find("limits.memory_bytes"), std::string::npos);
  j = good_job();
  j.mutable_limits()->set_cpu_ms(1);
  EXPECT_NE(why(j).find("cpu_ms"), std::string::npos);
  j = good_job();
  j.mutable_limits()->set_gpu_memory_bytes(1);
  EXPECT_NE(why(j).find("gpu_memory_bytes"), std::string::npos);
}

TEST(Validate, CapsClientMetaInEntriesAndBytes) {
  auto j = good_job();
  (*j.mutable_client_meta())["big"] = std::string(7 << 20, 'x');
  EXPECT_NE(why(j).find("client_meta is"), std::string::npos) << why(j);
  j = good_job();
  for (int i = 0; i < 65; ++i) (*j.mutable_client_meta())["k" + std::to_string(i)] = "v";
  EXPECT_NE(why(j).find("client_meta has 65 entries"), std::string::npos) << why(j);
  j = good_job();
  (*j.mutable_client_meta())["run"] = std::string(1000, 'x');
  EXPECT_EQ(why(j), "");
}

TEST(Validate, BoundsRepeatedFieldsAndIds) {
  auto j = good_job();
  for (int i = 0; i < 65; ++i) *j.mutable_native()->add_args() = j.native().args(0);
  EXPECT_NE(why(j).find("arguments, at most"), std::string::npos) << why(j);
  j = good_job();
  for (int i = 0; i < 9; ++i) j.mutable_native()->mutable_args(0)->mutable_tensor()->add_shape(1);
  EXPECT_NE(why(j).find("shape dimensions"), std::string::npos) << why(j);
  j = good_job();
  j.set_batch_id(std::string("a\0b", 3));
  EXPECT_NE(why(j).find("batch_id"), std::string::npos) << why(j);
  j = good_job();
  j.mutable_turn()->set_parent_job_id("../x y");
  EXPECT_NE(why(j).find("parent_job_id"), std::string::npos) << why(j);
  j = good_job();
  j.mutable_options()->mutable_timing()->set_min_trials(50);
  j.mutable_options()->mutable_timing()->set_max_trials(5);
  EXPECT_NE(why(j).find("min_trials"), std::string::npos) << why(j);
}

v1::Job trivial_job() {
  v1::Job j;
  j.set_job_id("t-1");
  j.set_tenant("team-a");
  j.mutable_trivial()->add_argv("/bin/true");
  return j;
}

std::string why_trivial(const v1::Job& j, bool allow_switches) {
  kj::TestingConfig testing;
  testing.allow_trivial_switches = allow_switches;
  auto r = kj::decode_for_judge(j.SerializeAsString(), "team-a", kj::LimitsConfig{}, testing);
  return std::holds_alternative<kj::InvalidJob>(r) ? std::get<kj::InvalidJob>(r).message : "";
}

// fail_infra / skip_sandbox are for the project's tests and benchmarks: a node enables them.
TEST(Decode, TrivialTestSwitchesOnlyWhereTheNodeAllowsThem) {
  for (bool infra : {true, false}) {
    auto j = trivial_job();
    if (infra) j.mutable_trivial()->set_fail_infra(true);
    else j.mutable_trivial()->set_skip_sandbox(true);
    EXPECT_NE(why_trivial(j, false).find("allow_trivial_switches"), std::string::npos);
    EXPECT_EQ(why_trivial(j, true), "");
  }
  EXPECT_EQ(why_trivial(trivial_job(), false), "");
}

// A trivial job passes the same field checks as a pipeline job (it echoes client_meta too).
TEST(Decode, TrivialJobsGetTheSharedFieldChecks) {
  auto j = trivial_job();
  (*j.mutable_client_meta())["big"] = std::string(64 << 10, 'x');
  EXPECT_NE(why_trivial(j, false).find("client_meta"), std::string::npos);
  j = trivial_job();
  j.mutable_options()->set_strictness(static_cast<v1::Strictness>(99));
  EXPECT_NE(why_trivial(j, false).find("strictness"), std::string::npos);
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
