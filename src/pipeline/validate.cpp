#include "pipeline/validate.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <regex>

#include "pipeline/dtype.h"
#include "pipeline/toolchain.h"
#include "runner/cuda_launch.h"

namespace kj {
namespace v1 = kjudge::v1;

namespace {

constexpr std::uint64_t kMaxTensorBytes = 2ull << 30;  // per tensor; the whole job's inputs live on disk

bool valid_name(const std::string& s, std::size_t max, const std::regex& re) {
  return !s.empty() && s.size() <= max && std::regex_match(s, re);
}

std::optional<InvalidJob> check_args(const v1::NativeTask& t) {
  if (t.args().empty()) return InvalidJob{"native task declares no arguments"};
  bool has_output = false;
  for (int i = 0; i < t.args_size(); ++i) {
    const auto& a = t.args(i);
    const std::string where = fmt::format("args[{}] ('{}')", i, a.name());
    if (a.has_tensor()) {
      const auto& ts = a.tensor();
      if (dtype_size(ts.dtype()) == 0) return InvalidJob{where + ": tensor dtype missing"};
      if (ts.role() == v1::ROLE_UNSPECIFIED) return InvalidJob{where + ": tensor role missing (IN, OUT or INOUT)"};
      if (ts.shape().empty()) return InvalidJob{where + ": tensor shape missing"};
      std::uint64_t n = 1;
      for (auto d : ts.shape()) {
        if (d <= 0) return InvalidJob{where + ": shape dimensions must be positive"};
        if (n > kMaxTensorBytes / static_cast<std::uint64_t>(d)) return InvalidJob{where + ": tensor too large"};
        n *= static_cast<std::uint64_t>(d);
      }
      if (n * dtype_size(ts.dtype()) > kMaxTensorBytes)
        return InvalidJob{fmt::format("{}: tensor of {} bytes exceeds the {} byte limit", where,
                                      n * dtype_size(ts.dtype()), kMaxTensorBytes)};
      if (ts.role() != v1::IN) has_output = true;
      if (ts.distribution().has_uniform() && !(ts.distribution().uniform().low() <= ts.distribution().uniform().high()))
        return InvalidJob{where + ": uniform distribution needs low <= high"};
      if (ts.distribution().has_int_range() && ts.distribution().int_range().low() > ts.distribution().int_range().high())
        return InvalidJob{where + ": int_range needs low <= high"};
    } else if (a.has_scalar()) {
      if (dtype_size(a.scalar().dtype()) == 0) return InvalidJob{where + ": scalar dtype missing"};
      if (a.scalar().value_case() == v1::ScalarValue::VALUE_NOT_SET) return InvalidJob{where + ": scalar value missing"};
    } else {
      return InvalidJob{where + ": neither tensor nor scalar"};
    }
  }
  if (!has_output) return InvalidJob{"native task has no OUT or INOUT tensor: nothing to check"};
  return std::nullopt;
}

std::optional<InvalidJob> check_native(const v1::NativeTask& t) {
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  const Toolchain* tc = toolchain_for(t.language());
  if (!tc) return InvalidJob{fmt::format("language {} is not supported by this node", v1::Language_Name(t.language()))};
  if (t.candidate().text().empty()) return InvalidJob{"candidate source is empty"};
  if (!valid_name(t.entry(), 128, ident)) return InvalidJob{"entry must be a C identifier (the function or kernel name)"};
  if (t.has_torch_reference()) return InvalidJob{"PyTorch references for native tasks are not supported by this version"};
  if (!t.has_reference_source() || t.reference_source().text().empty())
    return InvalidJob{"native task needs a reference_source (trusted source of the same language)"};
  if (auto bad = tc->check_flags(t.compile_flags())) return InvalidJob{*bad};
  if (t.language() == v1::OPENCL) {
    const auto& l = t.launch();
    if (l.global_size().empty() || l.global_size_size() > 3) return InvalidJob{"OpenCL launch.global_size needs 1 to 3 dimensions"};
    if (!l.local_size().empty() && l.local_size_size() != l.global_size_size())
      return InvalidJob{"OpenCL launch.local_size must have as many dimensions as global_size"};
    for (auto g : l.global_size())
      if (g == 0) return InvalidJob{"OpenCL launch.global_size dimensions must be positive"};
  }
  if (t.language() == v1::CUDA)
    if (auto bad = kjudge::runner::check_cuda_launch(t.launch())) return InvalidJob{*bad};
  return check_args(t);
}

std::optional<InvalidJob> check_kernelbench(const v1::KernelBenchTask& t) {
  static const std::regex constant("[A-Za-z_][A-Za-z0-9_]{0,63}");
  if (t.reference_py().empty()) return InvalidJob{"kernelbench.reference_py is empty (it must define Model, get_inputs, get_init_inputs)"};
  if (t.candidate_case() == v1::KernelBenchTask::CANDIDATE_NOT_SET ||
      (t.candidate_case() == v1::KernelBenchTask::kModelNewPy && t.model_new_py().empty()) ||
      (t.candidate_case() == v1::KernelBenchTask::kCompletion && t.completion().empty()))
    return InvalidJob{"kernelbench needs a candidate: model_new_py or completion"};
  if (t.backend() == v1::BACKEND_HIP || t.backend() == v1::BACKEND_MUSA)
    return InvalidJob{fmt::format("backend {} is defined but not supported by this node", v1::Backend_Name(t.backend()))};
  if (t.size_overrides_size() > 32) return InvalidJob{"at most 32 size_overrides"};
  for (const auto& [name, value] : t.size_overrides()) {
    if (!std::regex_match(name, constant)) return InvalidJob{fmt::format("size override '{}' is not a Python identifier", name)};
    if (value <= 0 || value > (1ll << 40)) return InvalidJob{fmt::format("size override {}={} is out of range", name, value)};
  }
  return std::nullopt;
}

// protobuf's time arithmetic CHECK-fails (aborts the process) outside these ranges, so a
// timestamp a client set is checked before anything computes with it.
std::optional<InvalidJob> check_timestamp(const google::protobuf::Timestamp& t, const char* field) {
  using google::protobuf::util::TimeUtil;
  if (t.seconds() < 0 || t.seconds() > TimeUtil::kTimestampMaxSeconds || t.nanos() < 0 || t.nanos() > 999'999'999)
    return InvalidJob{fmt::format("{} ({} s, {} ns) is not a timestamp between 1970 and 9999", field, t.seconds(), t.nanos())};
  return std::nullopt;
}

}  // namespace

std::optional<InvalidJob> check_envelope(const v1::Job& job, const std::string& expected_tenant) {
  static const std::regex job_id_re("[A-Za-z0-9._:-]+"), tenant_re("[a-z0-9_-]+");
  if (!valid_name(job.job_id(), 128, job_id_re)) return InvalidJob{"job_id missing or not [A-Za-z0-9._:-]{1,128}"};
  if (!valid_name(job.tenant(), 64, tenant_re)) return InvalidJob{"tenant missing or not [a-z0-9_-]{1,64}"};
  if (!expected_tenant.empty() && job.tenant() != expected_tenant)
    return InvalidJob{fmt::format("job.tenant '{}' does not match the queue's tenant '{}'", job.tenant(), expected_tenant)};
  if (auto bad = check_timestamp(job.submitted_at(), "submitted_at")) return bad;
  return check_timestamp(job.deadline(), "deadline");
}

std::optional<InvalidJob> validate_job(const v1::Job& job, const LimitsConfig& limits) {
  if (auto bad = check_envelope(job, "")) return bad;
  if (job.limits().compile_wall_ms() > limits.max_compile_wall_ms)
    return InvalidJob{fmt::format("limits.compile_wall_ms above this node's maximum of {}", limits.max_compile_wall_ms)};
  if (job.limits().run_wall_ms() > limits.max_run_wall_ms)
    return InvalidJob{fmt::format("limits.run_wall_ms above this node's maximum of {}", limits.max_run_wall_ms)};
  if (job.options().correctness_sets() > 16) return InvalidJob{"options.correctness_sets must be at most 16"};
  if (job.options().timing().max_trials() > 10000) return InvalidJob{"options.timing.max_trials must be at most 10000"};
  switch (job.task_case()) {
    case v1::Job::kNative: return check_native(job.native());
    case v1::Job::kKernelbench: return check_kernelbench(job.kernelbench());
    default: return InvalidJob{"job has no task (set 'native' or 'kernelbench')"};
  }
}

std::variant<v1::Job, InvalidJob> decode_job(const std::optional<std::string>& payload,
                                             const std::string& expected_tenant, const LimitsConfig& limits) {
  if (!payload) return InvalidJob{"queue entry has no 'job' field"};
  if (payload->size() > limits.max_job_bytes)
    return InvalidJob{fmt::format("job is {} bytes, over the {} byte limit", payload->size(), limits.max_job_bytes)};
  v1::Job job;
  if (payload->empty() || !job.ParseFromString(*payload)) return InvalidJob{"job payload is not a valid kjudge.v1.Job protobuf"};
  if (auto bad = check_envelope(job, expected_tenant)) return *bad;
  if (auto bad = validate_job(job, limits)) return *bad;
  return job;
}

}  // namespace kj
