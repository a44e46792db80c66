// POST /v1/jobs and POST /v1/batches: decode, check against the caller's tenant and limits
// (gateway/limits.h), then FCALL kj_submit for each job. A job is acknowledged (202) only once
// Redis holds it; job ids make a retried request idempotent, so a client that lost the reply
// (gateway restart, network) sends it again and nothing is lost or doubled.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gateway/body_codec.h"
#include "gateway/gateway.h"
#include "gateway/reply.h"
#include "kjudge/v1/job.pb.h"

namespace kj::gateway {

class Submission {
 public:
  Submission(Gateway& gateway, kjqueue::Queue& queue) : gateway_(gateway), queue_(queue) {}
  Reply submit_job(const std::string& tenant, std::string_view body, BodyFormat format);
  Reply submit_batch(const std::string& tenant, std::string_view body, BodyFormat format);

 private:
  struct Written {
    nlohmann::json accepted = nlohmann::json::array();
    std::size_t fresh = 0;  // not duplicates
  };
  BodyLimits body_limits(const std::string& tenant) const;
  // Admits and writes every job; the error reply when not all of them are in Redis.
  std::optional<Reply> admit_and_write(const std::string& tenant, const std::vector<kjudge::v1::Job>& jobs,
                                       std::uint32_t expected, Written& written);

  Gateway& gateway_;
  kjqueue::Queue& queue_;
};

// Fills in the tenant, a job id (random when empty) and the batch; the error when the job cannot
// be the caller's (another tenant, bad id, no task).
std::optional<Reply> prepare_job(kjudge::v1::Job& job, const std::string& tenant, const std::string& batch_id);

}  // namespace kj::gateway
