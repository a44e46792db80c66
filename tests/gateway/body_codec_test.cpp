#include "gateway/body_codec.h"

#include <gtest/gtest.h>

#include "kjudge/v1/gateway.pb.h"
#include "kjudge/v1/job.pb.h"

namespace kj::gateway {
namespace {

TEST(BodyCodec, MediaTypes) {
  EXPECT_EQ(body_format("application/json; charset=utf-8"), BodyFormat::Json);
  EXPECT_EQ(body_format("application/x-protobuf"), BodyFormat::Protobuf);
  EXPECT_EQ(body_format("text/plain"), std::nullopt);
  EXPECT_EQ(reply_format("application/x-protobuf, */*"), BodyFormat::Protobuf);
  EXPECT_EQ(reply_format(""), BodyFormat::Json);
}

TEST(BodyCodec, JsonRoundTripsAndRefusesUnknownFields) {
  kjudge::v1::Job job;
  job.set_job_id("j1");
  job.mutable_trivial()->add_argv("/bin/true");
  kjudge::v1::Job back;
  EXPECT_EQ(decode(encode(job, BodyFormat::Json), BodyFormat::Json, back), std::nullopt);
  EXPECT_EQ(back.job_id(), "j1");
  EXPECT_NE(decode(R"({"job_id": "j", "jobid": 1})", BodyFormat::Json, back), std::nullopt);
  EXPECT_NE(decode("{", BodyFormat::Json, back), std::nullopt);
}

TEST(BodyCodec, ProtobufRefusesGarbageAndOtherMessages) {
  kjudge::v1::Job job;
  job.set_job_id("j1");
  kjudge::v1::Job back;
  EXPECT_EQ(decode(encode(job, BodyFormat::Protobuf), BodyFormat::Protobuf, back), std::nullopt);
  EXPECT_NE(decode("\xff\xff\xff\xff", BodyFormat::Protobuf, back), std::nullopt);
  kjudge::v1::SubmitBatch batch;
  batch.set_expected(3);  // field 2 of SubmitBatch is Job's tenant (a string): wire type differs
  batch.add_jobs()->set_job_id("x");  // field 3 is Job's batch_id; a nested message parses as bytes...
  kjudge::v1::Job other;
  const auto error = decode(batch.SerializeAsString(), BodyFormat::Protobuf, other);
  EXPECT_NE(error, std::nullopt);
}

}  // namespace
}  // namespace kj::gateway
