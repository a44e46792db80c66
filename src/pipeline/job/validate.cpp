#include "pipeline/job/validate.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <cmath>
#include <regex>

#include "pipeline/job/dtype.h"
#include "pipeline/job/toolchain.h"
#include "runner/cuda_launch.h"

namespace kj {
namespace v1 = kjudge::v1;

namespace {

constexpr std::uint64_t kMaxTensorBytes = 2ull << 30;  // per tensor; the whole job's inputs live on disk
constexpr int kMaxArgs = 64;
constexpr int kMaxDims = 8;
constexpr int kMaxCompileFlags = 64;
constexpr int kMaxClientMetaEntries = 64;
constexpr std::size_t kMaxClientMetaBytes = 16 << 10;  // keys + values: echoed into a Result kept for result_ttl
constexpr int kMaxPolicyOverrides = 64;
constexpr std::size_t kMaxShortString = 256;           // names, flags, policy names, problem ids

bool valid_name(const std::string& s, std::size_t max, const std::regex& re) {
  return !s.empty() && s.size() <= max && std::regex_match(s, re);
}

// Finite bounds and a non-negative finite stddev: the input generators assume them.
std::optional<InvalidJob> check_distribution(const v1::Distribution& d, const std::string& where) {
  if (d.has_uniform() && !(std::isfinite(d.uniform().low()) && std::isfinite(d.uniform().high())))
    return InvalidJob{where + ": uniform distribution bounds must be finite"};
  if (d.has_normal() && !(std::isfinite(d.normal().mean()) && std::isfinite(d.normal().stddev()) && d.normal().stddev() >= 0))
    return InvalidJob{where + ": normal distribution needs a finite mean and a finite stddev >= 0"};
  if (d.has_constant() && !std::isfinite(d.constant())) return InvalidJob{where + ": constant distribution must be finite"};
  return std::nullopt;
}

std::optional<InvalidJob> check_args(const v1::NativeTask& t) {
  if (t.args().empty()) return InvalidJob{"native task declares no arguments"};
  if (t.args_size() > kMaxArgs) return InvalidJob{fmt::format("native task has {} arguments, at most {}", t.args_size(), kMaxArgs)};
  bool has_output = false;
  for (int i = 0; i < t.args_size(); ++i) {
    const auto& a = t.args(i);
    if (a.name().size() > kMaxShortString) return InvalidJob{fmt::format("args[{}]: name longer than 256 bytes", i)};
    const std::string where = fmt::format("args[{}] ('{}')", i, a.name());
    if (a.has_tensor()) {
      const auto& ts = a.tensor();
      if (dtype_size(ts.dtype()) == 0) return InvalidJob{where + ": tensor dtype missing"};
      if (ts.role() == v1::ROLE_UNSPECIFIED || !v1::ArgRole_IsValid(ts.role()))
        return InvalidJob{fmt::format("{}: tensor role {} is not IN, OUT or INOUT", where, static_cast<int>(ts.role()))};
      if (ts.shape_size() > kMaxDims) return InvalidJob{fmt::format("{}: at most {} shape dimensions", where, kMaxDims)};
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
      if (auto bad = check_distribution(ts.distribution(), where)) return bad;
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

// Unknown enum numbers survive proto3 parsing; their _Name() is "", so the number is reported.
template <typename Enum>
std::optional<InvalidJob> check_enum(Enum value, bool (*is_valid)(int), const char* field) {
  if (is_valid(static_cast<int>(value))) return std::nullopt;
  return InvalidJob{fmt::format("{} = {} is not a known value", field, static_cast<int>(value))};
}

std::optional<InvalidJob> check_launch_sizes(const v1::LaunchConfig& l) {
  if (l.global_size_size() > 3 || l.local_size_size() > 3 || l.grid_size() > 3 || l.block_size() > 3)
    return InvalidJob{"launch sizes have at most 3 dimensions"};
  return std::nullopt;
}

std::optional<InvalidJob> check_native(const v1::NativeTask& t) {
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  if (auto bad = check_enum(t.language(), v1::Language_IsValid, "native.language")) return bad;
  const Toolchain* tc = toolchain_for(t.language());
  if (!tc) return InvalidJob{fmt::format("language {} is not supported by this node", v1::Language_Name(t.language()))};
  if (t.compile_flags_size() > kMaxCompileFlags) return InvalidJob{fmt::format("at most {} compile_flags", kMaxCompileFlags)};
  if (auto bad = check_launch_sizes(t.launch())) return bad;
  if (t.candidate().text().empty()) return InvalidJob{"candidate source is empty"};
  if (t.candidate().name().size() > kMaxShortString || t.reference_source().name().size() > kMaxShortString)
    return InvalidJob{"source file names are at most 256 bytes"};
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
  if (auto bad = check_enum(t.backend(), v1::Backend_IsValid, "kernelbench.backend")) return bad;
  if (auto bad = check_enum(t.precision(), v1::Precision_IsValid, "kernelbench.precision")) return bad;
  if (t.problem_id().size() > kMaxShortString) return InvalidJob{"kernelbench.problem_id is longer than 256 bytes"};
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

std::optional<InvalidJob> check_optional_id(const std::string& s, const char* field) {
  static const std::regex id_re("[A-Za-z0-9._:-]+");
  if (s.empty() || valid_name(s, 128, id_re)) return std::nullopt;
  return InvalidJob{fmt::format("{} must be empty or [A-Za-z0-9._:-]{{1,128}}", field)};
}

// Echoed into the Result, which is kept for result_ttl: bounded in entries and bytes.
std::optional<InvalidJob> check_client_meta(const google::protobuf::Map<std::string, std::string>& meta) {
  if (meta.size() > kMaxClientMetaEntries)
    return InvalidJob{fmt::format("client_meta has {} entries, at most {}", meta.size(), kMaxClientMetaEntries)};
  std::size_t bytes = 0;
  for (const auto& [k, v] : meta) bytes += k.size() + v.size();
  if (bytes > kMaxClientMetaBytes)
    return InvalidJob{fmt::format("client_meta is {} bytes (keys and values), at most {}", bytes, kMaxClientMetaBytes)};
  return std::nullopt;
}

// This node's sandboxes apply its own memory and CPU limits ([sandbox] run_memory_bytes, run_cpus);
// a job cannot set them, so asking is an error rather than silently ignored.
std::optional<InvalidJob> check_limits(const v1::Limits& l, const LimitsConfig& limits) {
  if (l.compile_wall_ms() > limits.max_compile_wall_ms)
    return InvalidJob{fmt::format("limits.compile_wall_ms above this node's maximum of {}", limits.max_compile_wall_ms)};
  if (l.run_wall_ms() > limits.max_run_wall_ms)
    return InvalidJob{fmt::format("limits.run_wall_ms above this node's maximum of {}", limits.max_run_wall_ms)};
  if (l.memory_bytes() || l.cpu_ms() || l.gpu_memory_bytes())
    return InvalidJob{"limits.memory_bytes, cpu_ms and gpu_memory_bytes are not supported: the node's sandbox limits "
                      "apply ([sandbox] run_memory_bytes, run_cpus); leave them 0"};
  return std::nullopt;
}

std::optional<InvalidJob> check_tolerance(const v1::Tolerance& t) {
  if (!(std::isfinite(t.atol()) && t.atol() >= 0 && std::isfinite(t.rtol()) && t.rtol() >= 0))
    return InvalidJob{fmt::format("options.tolerance needs finite atol >= 0 and rtol >= 0 (got {}, {})", t.atol(), t.rtol())};
  return std::nullopt;
}

std::optional<InvalidJob> check_timing(const v1::TimingConfig& t) {
  if (t.max_trials() > 10000) return InvalidJob{"options.timing.max_trials must be at most 10000"};
  if (t.max_trials() && t.min_trials() > t.max_trials()) return InvalidJob{"options.timing.min_trials above max_trials"};
  if (t.warmup() > 10000) return InvalidJob{"options.timing.warmup must be at most 10000"};
  if (t.budget_ms() > 600'000) return InvalidJob{"options.timing.budget_ms must be at most 600000"};
  return std::nullopt;
}

std::optional<InvalidJob> check_options(const v1::Options& o) {
  if (o.correctness_sets() > 16) return InvalidJob{"options.correctness_sets must be at most 16"};
  if (auto bad = check_enum(o.strictness(), v1::Strictness_IsValid, "options.strictness")) return bad;
  if (o.has_tolerance())
    if (auto bad = check_tolerance(o.tolerance())) return bad;
  if (auto bad = check_timing(o.timing())) return bad;
  if (o.reward_policy().size() > kMaxShortString) return InvalidJob{"options.reward_policy is longer than 256 bytes"};
  if (o.policy_overrides_size() > kMaxPolicyOverrides)
    return InvalidJob{fmt::format("at most {} options.policy_overrides", kMaxPolicyOverrides)};
  for (const auto& [rule, severity] : o.policy_overrides())
    if (rule.size() > kMaxShortString || severity.size() > kMaxShortString)
      return InvalidJob{"options.policy_overrides entries are at most 256 bytes"};
  return std::nullopt;
}

}  // namespace

std::optional<InvalidJob> check_trivial(const v1::TrivialTask& t, const TestingConfig& testing) {
  if ((t.fail_infra() || t.skip_sandbox()) && !testing.allow_trivial_switches)
    return InvalidJob{"trivial.fail_infra and trivial.skip_sandbox are test switches, off on this node "
                      "([testing] allow_trivial_switches)"};
  if (t.argv().empty()) return std::nullopt;
  const std::string& cmd = t.argv(0);
  if ((cmd == "/bin/true" || cmd == "/bin/false") && t.argv_size() == 1) return std::nullopt;
  if (cmd == "/bin/sleep" && t.argv_size() == 2) {
    static const std::regex secs("[0-9]{1,2}(\\.[0-9]{1,3})?");
    if (std::regex_match(t.argv(1), secs) && std::stod(t.argv(1)) <= 10.0) return std::nullopt;
  }
  return InvalidJob{"trivial task argv must be [/bin/true], [/bin/false] or [/bin/sleep, <seconds up to 10>]"};
}

std::optional<InvalidJob> check_job_fields(const v1::Job& job, const LimitsConfig& limits) {
  if (auto bad = check_envelope(job, "")) return bad;
  if (auto bad = check_optional_id(job.batch_id(), "batch_id")) return bad;
  if (auto bad = check_optional_id(job.turn().parent_job_id(), "turn.parent_job_id")) return bad;
  if (auto bad = check_client_meta(job.client_meta())) return bad;
  if (auto bad = check_limits(job.limits(), limits)) return bad;
  return check_options(job.options());
}

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
  if (auto bad = check_job_fields(job, limits)) return bad;
  switch (job.task_case()) {
    case v1::Job::kNative: return check_native(job.native());
    case v1::Job::kKernelbench: return check_kernelbench(job.kernelbench());
    default: return InvalidJob{"job has no task (set 'native' or 'kernelbench')"};
  }
}

namespace {

std::variant<v1::Job, InvalidJob> parse_job(const std::optional<std::string>& payload, const LimitsConfig& limits) {
  if (!payload) return InvalidJob{"queue entry has no 'job' field"};
  if (payload->size() > limits.max_job_bytes)
    return InvalidJob{fmt::format("job is {} bytes, over the {} byte limit", payload->size(), limits.max_job_bytes)};
  v1::Job job;
  if (payload->empty() || !job.ParseFromString(*payload)) return InvalidJob{"job payload is not a valid kjudge.v1.Job protobuf"};
  return job;
}

}  // namespace

std::variant<v1::Job, InvalidJob> decode_job(const std::optional<std::string>& payload,
                                             const std::string& expected_tenant, const LimitsConfig& limits) {
  auto parsed = parse_job(payload, limits);
  if (auto* job = std::get_if<v1::Job>(&parsed)) {
    if (auto bad = check_envelope(*job, expected_tenant)) return *bad;
    if (auto bad = validate_job(*job, limits)) return *bad;
  }
  return parsed;
}

// TrivialTask is judged by judge() itself: the shared field checks, then its own.
std::variant<v1::Job, InvalidJob> decode_for_judge(const std::optional<std::string>& payload,
                                                   const std::string& expected_tenant, const LimitsConfig& limits,
                                                   const TestingConfig& testing) {
  auto parsed = parse_job(payload, limits);
  const auto* job = std::get_if<v1::Job>(&parsed);
  if (!job) return parsed;
  if (auto bad = check_envelope(*job, expected_tenant)) return *bad;
  const bool trivial = job->task_case() == v1::Job::kTrivial;
  if (auto bad = trivial ? check_job_fields(*job, limits) : validate_job(*job, limits)) return *bad;
  if (trivial)
    if (auto bad = check_trivial(job->trivial(), testing)) return *bad;
  return parsed;
}

}  // namespace kj
