// kjudged logs one JSON object per line: protobuf's own complaints too (issue 26 item 6).
#include <sstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include "common/log.h"
#include "kjudge/v1/job.pb.h"

// A job whose string field is not UTF-8: protobuf's complaint is one JSON line on stderr.
TEST(Log, ProtobufLinesAreJsonLines) {
  kj::log::init("info");
  kjudge::v1::Job job;
  std::string wire;
  { kjudge::v1::Job bad; bad.set_job_id("x"); wire = bad.SerializeAsString(); }
  wire[wire.size() - 1] = '\xff';  // the job_id's one byte
  testing::internal::CaptureStderr();
  EXPECT_FALSE(job.ParseFromString(wire));
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(err.empty());
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);  // throws on protobuf's plain text
    EXPECT_EQ(j.at("event"), "protobuf.log");
    EXPECT_NE(j.at("message").get<std::string>().find("UTF-8"), std::string::npos) << line;
  }
}
