#include "gateway/body_check.h"

#include <gtest/gtest.h>

#include <string>

#include "kjudge/v1/gateway.pb.h"
#include "kjudge/v1/job.pb.h"

namespace kj::gateway {
namespace {

const auto& kJob = *kjudge::v1::Job::descriptor();
const auto& kBatch = *kjudge::v1::SubmitBatch::descriptor();

std::string fault_of(const std::optional<BodyFault>& f) { return f ? f->path + ": " + f->message : "none"; }

TEST(BodyCheck, AValidJobPassesInBothForms) {
  const std::string json = R"({"job_id": "j1", "priority": "3", "submittedAt": "2026-12-05T12:00:00.5Z",
    "trivial": {"argv": ["/bin/true", "x"]}, "client_meta": {"k": "v"}, "limits": null})";
  EXPECT_EQ(fault_of(check_json(json, kJob, {})), "none");
  kjudge::v1::SubmitBatch batch;
  batch.set_batch_id("b");
  for (int i = 0; i < 3; ++i) batch.add_jobs()->mutable_trivial()->add_argv("/bin/true");
  (*batch.mutable_jobs(1)->mutable_client_meta())["k"] = "v";
  EXPECT_EQ(fault_of(check_protobuf(batch.SerializeAsString(), kBatch, {})), "none");
}

TEST(BodyCheck, ValuesOfTheWrongTypeAreRefusedWithTheirPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"trivial": {"argv": [["/bin/true"], "x"]}})", "$.trivial.argv[0]: a list where a string belongs"},
      {R"({"trivial": {"argv": ["a", {"b": 1}]}})", "$.trivial.argv[1]: an object where a string belongs"},
      {R"({"trivial": {"argv": "/bin/true"}})", "$.trivial.argv: a string where a list belongs"},
      {R"({"job_id": 5})", "$.job_id: a number where a string belongs"},
      {R"({"trivial": [1]})", "$.trivial: a list where an object (TrivialTask) belongs"},
      {R"({"trivial": {"argv": [null]}})", "$.trivial.argv[0]: null in a list"},
      {R"({"client_meta": {"k": ["v"]}})", "$.client_meta.k: a list where a string belongs"},
      {R"({"nope": 1})", "$.nope: not a field of kjudge.v1.Job"},
      {R"({"submitted_at": {"seconds": 1}})", "$.submitted_at: an object where a string belongs"},
  };
  for (const auto& [body, want] : cases) EXPECT_EQ(fault_of(check_json(body, kJob, {})), want) << body;
  EXPECT_EQ(check_json("{", kJob, {})->path, "$");
  EXPECT_EQ(check_json("{} trailing", kJob, {})->path, "$");
}

TEST(BodyCheck, LimitsStopABodyBeforeItIsParsed) {
  BodyLimits small{4, 50, 16};
  std::string many = R"({"trivial": {"argv": [)";
  for (int i = 0; i < 100; ++i) many += std::string(i ? "," : "") + "\"a\"";
  many += "]}}";
  EXPECT_EQ(fault_of(check_json(many, kJob, small)), "$.trivial.argv[47]: more than 50 values in the body");
  EXPECT_EQ(fault_of(check_json(R"({"job_id": "0123456789abcdefg"})", kJob, small)),
            "$.job_id: a string of 17 bytes (at most 16)");
  const std::string deep = R"({"jobs": [{"native": {"args": [{"tensor": {"shape": [1]}}]}}]})";
  EXPECT_EQ(fault_of(check_json(deep, kBatch, small)), "$.jobs[0].native.args: nested more than 4 deep");
  EXPECT_EQ(fault_of(check_json(deep, kBatch, {})), "none");
  // nothing past the limits is held: a million-deep nest fails at the limit, not by the stack
  const std::string bomb = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_EQ(fault_of(check_json(bomb, kJob, {})), "$: a list where an object (Job) belongs");
  EXPECT_EQ(check_json(R"({"client_meta": )" + std::string(100'000, '[') + "}", kJob, {})->path, "$.client_meta");
}

TEST(BodyCheck, ProtobufWireTypesDepthAndCountsAreChecked) {
  kjudge::v1::SubmitBatch batch;
  batch.set_batch_id("b");
  auto* job = batch.add_jobs();
  job->mutable_native()->add_args()->mutable_tensor()->add_shape(1);
  EXPECT_EQ(fault_of(check_protobuf(batch.SerializeAsString(), kBatch, {})), "none");
  EXPECT_EQ(fault_of(check_protobuf(batch.SerializeAsString(), kBatch, {4, 1000, 100})),
            "$.jobs[0].native.args[0].tensor: nested more than 4 deep");  // messages only: no list level
  // field 1 (job_id, a string) sent as a varint
  EXPECT_EQ(fault_of(check_protobuf(std::string("\x08\x05", 2), kJob, {})),
            "$.job_id: wire type 0 where 2 (string) belongs");
  EXPECT_EQ(fault_of(check_protobuf(std::string("\xf8\x07\x01", 3), kJob, {})),
            "$: field number 127 is not a field of kjudge.v1.Job");
  EXPECT_EQ(fault_of(check_protobuf(std::string("\x0a\x7f", 2), kJob, {})), "$.job_id: a length past the end of the body");
  // a million empty jobs in 2 MB would be a million messages: the count stops it first
  std::string empties;
  for (int i = 0; i < 1'000'000; ++i) empties += std::string("\x1a\x00", 2);
  EXPECT_EQ(fault_of(check_protobuf(empties, kBatch, {})), "$.jobs[250000]: more than 250000 values in the body");
  EXPECT_EQ(fault_of(check_protobuf(std::string("\x0a\x05hello", 7), kJob, {32, 100, 4})),
            "$.job_id: a string of 5 bytes (at most 4)");
}

}  // namespace
}  // namespace kj::gateway
