// Stage 0: turn raw queue bytes into a Job we are willing to run, or say precisely why not.
// Everything rejected here becomes an INVALID_JOB result; nothing is dropped.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"

namespace kj {

struct InvalidJob {
  std::string message;
};

// `expected_tenant`: the tenant whose stream carried the job (empty = don't check, local eval).
std::variant<kjudge::v1::Job, InvalidJob> decode_job(const std::optional<std::string>& payload,
                                                     const std::string& expected_tenant,
                                                     const LimitsConfig& limits);

// decode_job plus the task kinds judged by judge() itself rather than by a pipeline (TrivialTask).
// The daemon decodes with this.
std::variant<kjudge::v1::Job, InvalidJob> decode_for_judge(const std::optional<std::string>& payload,
                                                   const std::string& expected_tenant, const LimitsConfig& limits,
                                                   const TestingConfig& testing = {});

// The envelope every job kind shares: job_id, tenant (and that it is the queue's, unless empty),
// timestamps in the range protobuf's time arithmetic accepts.
std::optional<InvalidJob> check_envelope(const kjudge::v1::Job& job, const std::string& expected_tenant);

// The fields every job kind shares: the envelope, batch and turn ids, client_meta (bounded in
// entries and bytes), limits, options (known enum values, finite tolerances, bounded sizes).
std::optional<InvalidJob> check_job_fields(const kjudge::v1::Job& job, const LimitsConfig& limits);

// A TrivialTask: its allow-listed argv; fail_infra/skip_sandbox only where the node allows them.
std::optional<InvalidJob> check_trivial(const kjudge::v1::TrivialTask& t, const TestingConfig& testing);

// Semantic checks of an already-parsed job (also used by `kjudge eval` and the CLI before submit).
std::optional<InvalidJob> validate_job(const kjudge::v1::Job& job, const LimitsConfig& limits);

}  // namespace kj
