#include "pipeline/judge.h"

#include <google/protobuf/util/time_util.h>

#include "common/log.h"
#include "pipeline/feedback.h"
#include "pipeline/native_pipeline.h"
#include "pipeline/reward.h"
#include "pipeline/validate.h"

namespace kj {
namespace v1 = kjudge::v1;
using google::protobuf::util::TimeUtil;

namespace {

void finish(v1::Result& r, const std::string& reward_policy, const std::string& detail) {
  *r.mutable_reward() = compute_reward(r, reward_policy);
  r.set_feedback(make_feedback(r, detail));
  *r.mutable_finished_at() = TimeUtil::GetCurrentTime();
}

v1::Result header(const std::string& job_id, const std::string& tenant, const std::string& worker) {
  v1::Result r;
  r.set_job_id(job_id);
  r.set_tenant(tenant);
  r.set_worker(worker);
  r.set_attempt(1);
  *r.mutable_started_at() = TimeUtil::GetCurrentTime();
  r.mutable_system()->set_kjudge_version(KJUDGE_VERSION);
  r.mutable_system()->set_node(worker.substr(0, worker.find('/')));
  return r;
}

}  // namespace

v1::Result invalid_job_result(const std::string& job_id, const std::string& tenant, const std::string& message,
                              const std::string& worker) {
  v1::Result r = header(job_id, tenant, worker);
  r.set_status(v1::INVALID_JOB);
  r.set_message(message);
  r.set_stage_reached(v1::STAGE_VALIDATE);
  finish(r, "", "");
  return r;
}

v1::Result judge(const v1::Job& job, const JudgeContext& ctx) {
  if (auto bad = validate_job(job, ctx.config.limits)) return invalid_job_result(job.job_id(), job.tenant(), bad->message, ctx.worker);
  v1::Result r = header(job.job_id(), job.tenant(), ctx.worker);
  r.set_batch_id(job.batch_id());
  *r.mutable_client_meta() = job.client_meta();
  *r.mutable_submitted_at() = job.submitted_at();
  r.set_parent_job_id(job.turn().parent_job_id());
  r.set_turn_index(job.turn().turn_index());
  std::string detail;
  try {
    judge_native(job, ctx, r, detail);
  } catch (const std::exception& e) {
    log::error("pipeline.exception", {{"job_id", job.job_id()}, {"what", e.what()}});
    r.set_status(v1::INFRA_ERROR);
    r.set_message(std::string("internal error: ") + e.what());
  }
  if (r.status() == v1::VERDICT_UNSPECIFIED) {
    r.set_status(v1::INFRA_ERROR);
    r.set_message("pipeline ended without a verdict");
  }
  if (r.status() == v1::OK && !known_reward_policy(job.options().reward_policy()))
    r.set_message(r.message() + "; unknown reward policy, default used");
  finish(r, job.options().reward_policy(), detail);
  return r;
}

}  // namespace kj
