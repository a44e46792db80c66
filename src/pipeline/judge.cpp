#include "pipeline/judge.h"

#include <google/protobuf/util/time_util.h>

#include <fmt/format.h>

#include <regex>

#include "common/log.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/run/sandbox_watch.h"
#include "pipeline/run/workspace.h"
#include "pipeline/verdict/feedback.h"
#include "pipeline/run/host_fault.h"
#include "pipeline/kernelbench/pipeline.h"
#include "pipeline/native/pipeline.h"
#include "pipeline/verdict/reward.h"
#include "pipeline/job/validate.h"
#include "pipeline/verdict/verdict.h"

namespace kj {
namespace v1 = kjudge::v1;
using google::protobuf::util::TimeUtil;

namespace {

void finish(v1::Result& r, const std::string& reward_policy, const std::string& detail) {
  *r.mutable_reward() = compute_reward(r, reward_policy);
  r.set_feedback(make_feedback(r, detail));
  *r.mutable_finished_at() = kj::now_timestamp();
}

v1::Result header(const std::string& job_id, const std::string& tenant, const std::string& worker) {
  v1::Result r;
  r.set_job_id(job_id);
  r.set_tenant(tenant);
  r.set_worker(worker);
  r.set_attempt(1);
  *r.mutable_started_at() = kj::now_timestamp();
  r.mutable_system()->set_kjudge_version(KJUDGE_VERSION);
  r.mutable_system()->set_node(worker.substr(0, worker.find('/')));
  return r;
}

// What every judged job's result echoes back to the client from its job.
v1::Result echoed_header(const v1::Job& job, const std::string& worker) {
  v1::Result r = header(job.job_id(), job.tenant(), worker);
  r.set_batch_id(job.batch_id());
  *r.mutable_client_meta() = job.client_meta();
  *r.mutable_submitted_at() = job.submitted_at();
  r.set_parent_job_id(job.turn().parent_job_id());
  r.set_turn_index(job.turn().turn_index());
  return r;
}

// TrivialTask: one allow-listed command in a bare sandbox (system binds, no job dir).
void judge_trivial(const v1::Job& job, const JudgeContext& ctx, v1::Result& r) {
  if (job.trivial().fail_infra())
    return record_verdict(r, node_fault("trivial task asked for an infrastructure failure (testing)"));
  if (job.trivial().skip_sandbox()) {  // the queue and daemon path alone (bench/throughput)
    record_verdict(r, decide_trivial(std::nullopt));
    r.set_stage_reached(v1::STAGE_DONE);
    return;
  }
  kjsandbox::Policy p;
  p.argv = job.trivial().argv().empty() ? std::vector<std::string>{"/bin/true"}
                                        : std::vector<std::string>(job.trivial().argv().begin(), job.trivial().argv().end());
  p.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  p.binds = kjsandbox::default_system_binds();
  p.host_uid = sandbox_host_uid(ctx.config.sandbox.host_uid);
  p.host_gid = sandbox_host_gid(ctx.config.sandbox.host_gid);
  p.wall_limit = std::chrono::milliseconds(15'000);
  p.output_limit_bytes = 64 << 10;
  const auto rep = run_sandboxed(p);
  r.set_stage_reached(v1::STAGE_CANDIDATE);
  r.mutable_resources()->set_wall_seconds(rep.wall_seconds);
  r.mutable_resources()->set_cpu_seconds(rep.cpu_seconds);
  record_verdict(r, decide_trivial(rep));
  if (rep.ok()) r.set_stage_reached(v1::STAGE_DONE);
}

}  // namespace

google::protobuf::Timestamp now_timestamp() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  google::protobuf::Timestamp t;
  t.set_seconds(ns / 1'000'000'000);
  t.set_nanos(static_cast<int>(ns % 1'000'000'000));
  return t;
}

v1::Result invalid_job_result(const std::string& job_id, const std::string& tenant, const std::string& message,
                              const std::string& worker) {
  v1::Result r = header(job_id, tenant, worker);
  record_verdict(r, job_fault(message));
  r.set_stage_reached(v1::STAGE_VALIDATE);
  finish(r, "", "");
  return r;
}

v1::Result judge(const v1::Job& job, const JudgeContext& ctx) {
  SandboxWatchScope watch_scope(ctx.watch);
  if (job.task_case() == v1::Job::kTrivial) {
    if (auto bad = check_job_fields(job, ctx.config.limits)) return invalid_job_result(job.job_id(), job.tenant(), bad->message, ctx.worker);
    if (auto bad = check_trivial(job.trivial(), ctx.config.testing))
      return invalid_job_result(job.job_id(), job.tenant(), bad->message, ctx.worker);
    v1::Result r = echoed_header(job, ctx.worker);
    try {
      judge_trivial(job, ctx, r);
    } catch (const std::exception& e) {
      record_verdict(r, node_fault(std::string("internal error: ") + e.what()));
    }
    *r.mutable_finished_at() = kj::now_timestamp();
    return r;
  }
  if (auto bad = validate_job(job, ctx.config.limits)) return invalid_job_result(job.job_id(), job.tenant(), bad->message, ctx.worker);
  v1::Result r = echoed_header(job, ctx.worker);
  std::string detail;
  try {
    if (auto low = check_free_space(ctx.config.state_dir, ctx.config.limits))
      record_verdict(r, node_fault(*low));
    else if (job.task_case() == v1::Job::kKernelbench)
      judge_kernelbench(job, ctx, r, detail);
    else
      judge_native(job, ctx, r, detail);
  } catch (const std::exception& e) {
    log::error("pipeline.exception", {{"job_id", job.job_id()}, {"what", e.what()}});
    record_verdict(r, node_fault(std::string("internal error: ") + e.what()));
  }
  if (r.status() == v1::VERDICT_UNSPECIFIED) record_verdict(r, node_fault("pipeline ended without a verdict"));
  if (blames_a_party(r.status()))
    if (auto fault = host_fault_after_job(ctx.config.state_dir))
      record_verdict(r, node_fault("host fault: " + *fault + " (the pipeline had said: " + r.message() + ")"));
  if (r.status() == v1::OK && !known_reward_policy(job.options().reward_policy()))
    r.set_message(r.message() + "; unknown reward policy, default used");
  finish(r, job.options().reward_policy(), detail);
  return r;
}

}  // namespace kj
