// What kjudged computes from a decoded job's client-set timestamps before judging it (expiry, the
// queue-wait metric). Plain integer arithmetic: protobuf's TimeUtil operators CHECK-fail (abort
// the process) outside their range. Header-only so the job fuzzer (tests/fault) runs this code.
#pragma once

#include <google/protobuf/timestamp.pb.h>

#include <optional>

#include "kjudge/v1/job.pb.h"

namespace kj {

inline bool timestamp_after(const google::protobuf::Timestamp& a, const google::protobuf::Timestamp& b) {
  return a.seconds() != b.seconds() ? a.seconds() > b.seconds() : a.nanos() > b.nanos();
}

// A deadline of 0 (unset) never passes.
inline bool deadline_passed(const kjudge::v1::Job& job, const google::protobuf::Timestamp& now) {
  return job.has_deadline() && job.deadline().seconds() > 0 && timestamp_after(now, job.deadline());
}

// Seconds between submitted_at and now (>= 0), or nothing when the client left submitted_at unset.
inline std::optional<double> queue_wait_seconds(const kjudge::v1::Job& job, const google::protobuf::Timestamp& now) {
  if (!job.has_submitted_at() || job.submitted_at().seconds() <= 0) return std::nullopt;
  const double wait = static_cast<double>(now.seconds() - job.submitted_at().seconds()) +
                      (now.nanos() - job.submitted_at().nanos()) / 1e9;
  return wait > 0 ? wait : 0.0;
}

}  // namespace kj
