#include "gateway/submission.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>

#include "common/random.h"
#include "kjudge/v1/gateway.pb.h"

namespace kj::gateway {
namespace v1 = kjudge::v1;
using nlohmann::json;

namespace {

// 400 naming where the body went wrong: {"error": {"code", "message", "path"}}; 413 for a string
// no job that holds it could fit.
Reply body_refusal(BodyFormat format, const BodyFault& fault) {
  const auto code = fault.too_large ? "job_too_large" : format == BodyFormat::Json ? "bad_json" : "bad_protobuf";
  Reply r = error_reply(fault.too_large ? 413 : 400, code, fault.path + ": " + fault.message);
  auto body = json::parse(r.body);
  body["error"]["path"] = fault.path;
  r.body = body.dump();
  return r;
}

Reply admission_refusal(Refusal r, const TenantLimits& l) {
  switch (r) {
    case Refusal::JobTooLarge:
      return error_reply(413, refusal_name(r), fmt::format("a job is over the tenant's {} byte limit", l.max_job_bytes));
    case Refusal::BatchTooLarge:
      return error_reply(413, refusal_name(r), fmt::format("a batch may have at most {} jobs", l.max_batch_jobs));
    case Refusal::OverQuota:
      return error_reply(429, refusal_name(r),
                         fmt::format("the tenant has {} jobs waiting for a result already (its quota)", l.max_queued));
    case Refusal::RateLimited:
      return error_reply(429, refusal_name(r),
                         fmt::format("over the tenant's rate of {} jobs/s (burst {}): retry later", l.rate_per_s, l.burst));
    case Refusal::None: break;
  }
  return error_reply(500, "internal", "unknown refusal");
}

// Redis said no after the gateway said yes: its own quota or byte limit (a client's 4xx), else 503.
Reply redis_refusal(const kjqueue::QueueError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const kjqueue::QueueFull*>(&e)) return error_reply(429, "queue_full", what);
  if (what.find("byte limit") != std::string::npos) return error_reply(413, "job_too_large", what);
  return error_reply(503, "redis_unavailable", what);
}

std::uint64_t largest_job_bytes(const std::vector<v1::Job>& jobs) {
  std::uint64_t largest = 0;
  for (const auto& j : jobs) largest = std::max<std::uint64_t>(largest, j.ByteSizeLong());
  return largest;
}

}  // namespace

std::optional<Reply> prepare_job(v1::Job& job, const std::string& tenant, const std::string& batch_id) {
  if (job.tenant().empty()) job.set_tenant(tenant);
  if (job.tenant() != tenant)
    return error_reply(403, "forbidden_tenant", "the job names tenant '" + job.tenant() + "', the token is '" + tenant + "'s");
  if (job.job_id().empty()) job.set_job_id(fmt::format("gw-{:016x}{:016x}", random_u64(), random_u64()));
  if (!kjqueue::valid_job_id(job.job_id()))
    return error_reply(400, "bad_job_id", "job_id must match [A-Za-z0-9._:-]{1,128}");
  if (!batch_id.empty() && !job.batch_id().empty() && job.batch_id() != batch_id)
    return error_reply(400, "bad_batch_id", "job " + job.job_id() + " names another batch");
  if (!batch_id.empty()) job.set_batch_id(batch_id);
  if (!job.batch_id().empty() && !kjqueue::valid_job_id(job.batch_id()))
    return error_reply(400, "bad_batch_id", "batch_id must match [A-Za-z0-9._:-]{1,128}");
  if (job.task_case() == v1::Job::TASK_NOT_SET)
    return error_reply(400, "no_task", "job " + job.job_id() + " has no task (kernelbench, native or trivial)");
  if (!job.has_submitted_at()) {  // to the nanosecond: queue-wait metrics subtract it (TimeUtil's clock has seconds)
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    *job.mutable_submitted_at() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  }
  return std::nullopt;
}

BodyLimits Submission::body_limits(const std::string& tenant) const {
  const auto& c = gateway_.config();
  return {c.max_body_depth, c.max_body_elements, c.limits_for(tenant).max_job_bytes};  // no longer string fits a job
}

std::optional<Reply> Submission::admit_and_write(const std::string& tenant, const std::vector<v1::Job>& jobs,
                                                 std::uint32_t expected, Written& written) {
  auto& admission = gateway_.admission();
  const Refusal r = admission.admit(tenant, jobs.size(), largest_job_bytes(jobs));
  if (r != Refusal::None) return admission_refusal(r, gateway_.config().limits_for(tenant));
  std::size_t done = 0;
  try {
    for (; done < jobs.size(); ++done) {
      const auto& job = jobs[done];
      const auto res = queue_.submit(tenant, job.job_id(), job.SerializeAsString(),
                                     {job.batch_id(), expected, kjqueue::lane_of_priority(job.priority())});
      written.accepted.push_back({{"job_id", job.job_id()}, {"entry_id", res.entry_id}, {"duplicate", res.duplicate}});
      if (res.duplicate) {
        admission.release(tenant, 1);
      } else {
        admission.written(tenant, 1);
        ++written.fresh;
      }
    }
  } catch (const kjqueue::QueueError& e) {
    admission.release(tenant, jobs.size() - done);
    gateway_.metrics().accepted(tenant, written.fresh);
    Reply reply = redis_refusal(e);
    if (reply.status == 503) gateway_.metrics().redis_error();
    return reply;
  }
  gateway_.metrics().accepted(tenant, written.fresh);
  return std::nullopt;
}

Reply Submission::submit_job(const std::string& tenant, std::string_view body, BodyFormat format) {
  std::vector<v1::Job> jobs(1);
  if (auto fault = decode(body, format, jobs[0], body_limits(tenant))) return body_refusal(format, *fault);
  if (auto error = prepare_job(jobs[0], tenant, "")) return *error;
  Written written;
  if (auto failed = admit_and_write(tenant, jobs, 0, written)) return *failed;
  return json_reply(202, written.accepted[0]);
}

Reply Submission::submit_batch(const std::string& tenant, std::string_view body, BodyFormat format) {
  v1::SubmitBatch batch;
  if (auto fault = decode(body, format, batch, body_limits(tenant))) return body_refusal(format, *fault);
  if (batch.batch_id().empty() || !kjqueue::valid_job_id(batch.batch_id()))
    return error_reply(400, "bad_batch_id", "batch_id must match [A-Za-z0-9._:-]{1,128}");
  if (batch.jobs().empty()) return error_reply(400, "empty_batch", "a batch needs at least one job");
  std::vector<v1::Job> jobs;  // moved out of the batch: a 16 MiB batch is not held twice
  jobs.reserve(static_cast<std::size_t>(batch.jobs_size()));
  for (auto& job : *batch.mutable_jobs()) jobs.push_back(std::move(job));
  for (auto& job : jobs)
    if (auto error = prepare_job(job, tenant, batch.batch_id())) return *error;
  const std::uint32_t expected = batch.expected() ? batch.expected() : static_cast<std::uint32_t>(jobs.size());
  Written written;
  if (auto failed = admit_and_write(tenant, jobs, expected, written)) {
    auto body_json = json::parse(failed->body);
    body_json["accepted"] = written.accepted;  // the ones Redis holds; resending the batch is safe
    failed->body = body_json.dump();
    return *failed;
  }
  return json_reply(202, {{"batch_id", batch.batch_id()}, {"jobs", written.accepted}});
}

}  // namespace kj::gateway
