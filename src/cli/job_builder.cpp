#include "cli/job_builder.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

namespace kj::cli {
namespace v1 = kjudge::v1;

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string random_job_id() {
  std::random_device rd;
  return fmt::format("job-{:08x}{:08x}", rd(), rd());
}

namespace {

template <typename Msg>
Msg parse_json(const std::filesystem::path& p) {
  Msg m;
  auto st = google::protobuf::util::JsonStringToMessage(read_text(p), &m);
  if (!st.ok()) throw std::runtime_error(fmt::format("{}: {}", p.string(), st.message().as_string()));
  return m;
}

}  // namespace

v1::Job build_job(const JobSpec& spec) {
  v1::Job job;
  if (spec.job_json) job = parse_json<v1::Job>(*spec.job_json);
  if (spec.task_json) {
    *job.mutable_native() = parse_json<v1::NativeTask>(*spec.task_json);
    auto* ref = job.mutable_native()->mutable_reference_source();
    if (spec.reference) {
      ref->set_name(spec.reference->filename().string());
      ref->set_text(read_text(*spec.reference));
    } else if (!ref->name().empty() && ref->text().empty()) {
      ref->set_text(read_text(spec.task_json->parent_path() / ref->name()));
    }
  }
  if (spec.candidate) {
    if (!job.has_native()) throw std::runtime_error("--candidate needs --task (or a native task in --job)");
    auto* c = job.mutable_native()->mutable_candidate();
    c->set_name(spec.candidate->filename().string());
    c->set_text(read_text(*spec.candidate));
  }
  if (spec.kb_reference || spec.kb_candidate || spec.kb_completion) {
    if (job.has_native()) throw std::runtime_error("--kb-* options cannot be combined with a native task");
    auto* kb = job.mutable_kernelbench();
    if (spec.kb_reference) kb->set_reference_py(read_text(*spec.kb_reference));
    if (spec.kb_candidate) kb->set_model_new_py(read_text(*spec.kb_candidate));
    if (spec.kb_completion) kb->set_completion(read_text(*spec.kb_completion));
    if (spec.kb_reference) kb->set_problem_id(spec.kb_reference->parent_path().filename().string());
  }
  if (job.has_kernelbench()) {
    auto* kb = job.mutable_kernelbench();
    if (!spec.backend.empty()) {
      v1::Backend b;
      std::string name = "BACKEND_" + spec.backend;
      for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if (!v1::Backend_Parse(name, &b)) throw std::runtime_error("--backend must be cuda, triton, cpu, hip or musa");
      kb->set_backend(b);
    }
    if (spec.precision == "fp16") kb->set_precision(v1::FP16);
    else if (spec.precision == "bf16") kb->set_precision(v1::BF16_PRECISION);
    else if (spec.precision == "fp32") kb->set_precision(v1::FP32);
    else if (!spec.precision.empty()) throw std::runtime_error("--precision must be fp32, fp16 or bf16");
    for (const auto& s : spec.sizes) {
      const auto eq = s.find('=');
      if (eq == std::string::npos) throw std::runtime_error("--size takes NAME=VALUE, not '" + s + "'");
      (*kb->mutable_size_overrides())[s.substr(0, eq)] = std::stoll(s.substr(eq + 1));
    }
    if (spec.compat) job.mutable_options()->set_strictness(v1::COMPAT_KERNELBENCH);
  } else if (!spec.backend.empty() || !spec.precision.empty() || spec.compat || !spec.sizes.empty()) {
    throw std::runtime_error("--backend/--precision/--compat/--size apply to KernelBench-format tasks only");
  }
  if (spec.trivial) {
    if (job.task_case() != v1::Job::TASK_NOT_SET) throw std::runtime_error("--trivial cannot be combined with a task");
    auto* t = job.mutable_trivial();
    for (const auto& a : spec.trivial_argv) t->add_argv(a);
  }
  for (const auto& m : spec.meta) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0) throw std::runtime_error("--meta takes KEY=VALUE, not '" + m + "'");
    (*job.mutable_client_meta())[m.substr(0, eq)] = m.substr(eq + 1);
  }
  // KernelBench's eval_results.json groups samples by problem: keep the problem id in the result.
  if (job.has_kernelbench() && !job.kernelbench().problem_id().empty() && !job.client_meta().contains("problem_id"))
    (*job.mutable_client_meta())["problem_id"] = job.kernelbench().problem_id();
  if (!spec.job_id.empty()) job.set_job_id(spec.job_id);
  if (job.job_id().empty()) job.set_job_id(random_job_id());
  if (spec.tenant) job.set_tenant(*spec.tenant);
  if (job.tenant().empty()) job.set_tenant(spec.default_tenant);
  if (!spec.batch_id.empty()) job.set_batch_id(spec.batch_id);
  if (spec.priority) job.set_priority(*spec.priority);
  if (spec.compile_wall_ms) job.mutable_limits()->set_compile_wall_ms(spec.compile_wall_ms);
  if (spec.run_wall_ms) job.mutable_limits()->set_run_wall_ms(spec.run_wall_ms);
  if (spec.trials) job.mutable_options()->mutable_timing()->set_max_trials(spec.trials);
  if (spec.sets) job.mutable_options()->set_correctness_sets(spec.sets);
  if (!spec.reward_policy.empty()) job.mutable_options()->set_reward_policy(spec.reward_policy);
  {  // with nanoseconds (TimeUtil::GetCurrentTime() has whole seconds with this protobuf)
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    job.mutable_submitted_at()->set_seconds(ns / 1'000'000'000);
    job.mutable_submitted_at()->set_nanos(static_cast<int>(ns % 1'000'000'000));
  }
  return job;
}

}  // namespace kj::cli
