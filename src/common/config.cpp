#include "common/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/log.h"

namespace kj {
namespace {

template <typename T>
void take(const toml::table& t, std::string_view key, T& out) {
  if (auto v = t[key].value<T>()) out = *v;
}

// A path setting: an empty string keeps the default, as an absent key does.
void take_path(const toml::table& t, std::string_view key, std::filesystem::path& out) {
  if (auto v = t[key].value<std::string>(); v && !v->empty()) out = *v;
}

void take_u32(const toml::table& t, std::string_view key, std::uint32_t& out) {
  if (auto v = t[key].value<std::int64_t>()) {
    if (*v < 0 || *v > UINT32_MAX) throw std::runtime_error(std::string(key) + " out of range");
    out = static_cast<std::uint32_t>(*v);
  }
}

void take_u64(const toml::table& t, std::string_view key, std::uint64_t& out) {
  if (auto v = t[key].value<std::int64_t>()) {
    if (*v < 0) throw std::runtime_error(std::string(key) + " must not be negative");
    out = static_cast<std::uint64_t>(*v);
  }
}

// The keys below are strict: present with the wrong type is an error naming the key, not a silent
// default (a quoted number or a typo'd mode must not leave a limit unset).
std::string type_of(const toml::node& n) {
  std::ostringstream o;
  o << n.type();
  return o.str();
}

std::optional<std::int64_t> int_key(const toml::table& t, const std::string& name, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value_exact<std::int64_t>()) return *v;
  throw std::runtime_error(name + " must be an integer, not a " + type_of(*n));
}

std::optional<double> number_key(const toml::table& t, const std::string& name, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value_exact<std::int64_t>()) return static_cast<double>(*v);
  if (auto v = n->value_exact<double>()) return *v;
  throw std::runtime_error(name + " must be a number, not a " + type_of(*n));
}

std::optional<std::string> string_key(const toml::table& t, const std::string& name, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value_exact<std::string>()) return *v;
  throw std::runtime_error(name + " must be a string, not a " + type_of(*n));
}

template <typename Int>
void take_bounded(const toml::table& t, std::string_view section, std::string_view key, Int& out,
                  std::int64_t min, std::int64_t max, std::string_view what) {
  const std::string name = std::string(section) + "." + std::string(key);
  if (auto v = int_key(t, name, key)) {
    if (*v < min || *v > max)
      throw std::runtime_error(name + " must be " + std::string(what) + " in " + std::to_string(min) + ".." +
                               std::to_string(max) + ", not " + std::to_string(*v));
    out = static_cast<Int>(*v);
  }
}

// A number within [min, max] (nan rejected); `zero_means` says what 0 does, for the error.
void take_number_in(const toml::table& t, std::string_view section, std::string_view key, double& out, double min,
                    double max, std::string_view zero_means) {
  const std::string name = std::string(section) + "." + std::string(key);
  if (auto v = number_key(t, name, key)) {
    if (!(*v >= min && *v <= max))
      throw std::runtime_error(fmt::format("{} must be in [{}, {}] (0: {})", name, min, max, zero_means));
    out = *v;
  }
}

// CPUs' worth of time: 0 clears the limit (so a drop-in can lift one set before); below 0.01 the
// cgroup quota would round to its 1 ms floor anyway.
void take_cpus(const toml::table& t, std::string_view key, std::optional<double>& out) {
  const std::string name = "sandbox." + std::string(key);
  if (auto v = number_key(t, name, key)) {
    if (*v == 0) {
      out.reset();
      return;
    }
    if (!(*v >= 0.01 && *v <= 4096))  // also rejects nan
      throw std::runtime_error(name + " must be 0 (no limit) or a number of CPUs in 0.01..4096, not " +
                               std::to_string(*v));
    out = *v;
  }
}

// sandbox.gpus: "all" (every NVIDIA device of the node) or a list of device minors.
void apply_gpus(const toml::table& s, SandboxConfig& sb) {
  const auto* node = s.get("gpus");
  if (!node) return;
  const std::string bad = "sandbox.gpus must be \"all\" or a list of distinct GPU device minors in 0..999";
  if (auto text = node->value<std::string>()) {
    if (*text != "all") throw std::runtime_error(bad + ", not \"" + *text + "\"");
    sb.all_gpus = true;
    return;
  }
  const auto* arr = node->as_array();
  if (!arr || arr->empty()) throw std::runtime_error(bad);
  for (const auto& e : *arr) {
    const auto v = e.value<std::int64_t>();
    if (!v || *v < 0 || *v > 999 || std::find(sb.gpus.begin(), sb.gpus.end(), *v) != sb.gpus.end())
      throw std::runtime_error(bad);
    sb.gpus.push_back(static_cast<int>(*v));
  }
}

void apply_sandbox_limits(const toml::table& s, SandboxConfig& sb) {
  constexpr std::int64_t kMinMemory = 16ll << 20;  // less cannot start a compiler; catches MiB-for-bytes slips
  constexpr std::int64_t kMaxMemory = 1ll << 50;
  take_bounded(s, "sandbox", "compile_memory_bytes", sb.compile_memory_bytes, kMinMemory, kMaxMemory, "bytes");
  take_bounded(s, "sandbox", "run_memory_bytes", sb.run_memory_bytes, kMinMemory, kMaxMemory, "bytes");
  take_bounded(s, "sandbox", "compile_pids", sb.compile_pids, 16, 4'194'304, "a task count");
  take_bounded(s, "sandbox", "run_pids", sb.run_pids, 16, 4'194'304, "a task count");
  take_cpus(s, "compile_cpus", sb.compile_cpus);
  take_cpus(s, "run_cpus", sb.run_cpus);
  take_bounded(s, "sandbox", "compile_cpu_weight", sb.compile_cpu_weight, 1, 10'000, "a cgroup CPU weight");
  if (auto m = string_key(s, "sandbox.seccomp", "seccomp")) {
    if (*m == "enforce") sb.seccomp = SeccompMode::Enforce;
    else if (*m == "log") sb.seccomp = SeccompMode::Log;
    else if (*m == "off") sb.seccomp = SeccompMode::Off;
    else throw std::runtime_error("sandbox.seccomp must be \"enforce\", \"log\" or \"off\", not \"" + *m + "\"");
  }
  if (auto v = int_key(s, "sandbox.gpu_index", "gpu_index")) {
    if (*v < 0 || *v > 999)
      throw std::runtime_error("sandbox.gpu_index must be a GPU's device minor in 0..999, not " + std::to_string(*v));
    sb.gpu_index = static_cast<int>(*v);
  }
  apply_gpus(s, sb);
}

void apply_redis(const toml::table& r, RedisConfig& c) {
  take(r, "url", c.url);
  take(r, "username", c.username);
  take(r, "password", c.password);
  std::int64_t p = c.partition;
  take(r, "partition", p);
  c.partition = static_cast<int>(p);
  std::int64_t acks = c.replica_acks;
  take(r, "replica_acks", acks);
  if (acks < -1 || acks > 16)
    throw std::runtime_error("redis.replica_acks must be -1 (1 with redis+sentinel://, else 0) to 16, not " +
                             std::to_string(acks));
  c.replica_acks = static_cast<int>(acks);
}

void apply_build(const toml::table& b, BuildConfig& c) {
  take(b, "shared", c.shared);
  take_bounded(b, "build", "artifact_max_bytes", c.artifact_max_bytes, 1024, 512ll << 20, "bytes");
  std::int64_t ttl = c.artifact_ttl.count(), lease = c.lease.count(), alive = c.builder_ttl.count(), local = c.local_max,
               idle = c.request_idle.count(), concurrency = c.concurrency;
  take_bounded(b, "build", "artifact_ttl_s", ttl, 1, 30 * 24 * 3600, "seconds");
  take_path(b, "artifact_dir", c.artifact_dir);
  if (!c.artifact_dir.empty() && !c.artifact_dir.is_absolute())
    throw std::runtime_error("build.artifact_dir must be an absolute path, not \"" + c.artifact_dir.string() + "\"");
  std::int64_t file_ttl = c.artifact_file_ttl.count();
  take_bounded(b, "build", "artifact_file_ttl_s", file_ttl, 60, 365ll * 24 * 3600, "seconds");
  c.artifact_file_ttl = std::chrono::seconds(file_ttl);
  take_bounded(b, "build", "lease_ms", lease, 100, 3'600'000, "milliseconds");
  take_bounded(b, "build", "builder_ttl_ms", alive, 1000, 3'600'000, "milliseconds");
  take_bounded(b, "build", "local_max", local, -1, 1024, "a build count");
  take_bounded(b, "build", "request_idle_ms", idle, 1000, 24ll * 3'600'000, "milliseconds");
  take_bounded(b, "build", "concurrency", concurrency, 0, 1024, "a build count");
  c.artifact_ttl = std::chrono::seconds(ttl);
  c.lease = std::chrono::milliseconds(lease);
  c.builder_ttl = std::chrono::milliseconds(alive);
  c.local_max = static_cast<int>(local);
  c.request_idle = std::chrono::milliseconds(idle);
  c.concurrency = static_cast<int>(concurrency);
}

// [queue]: fetching, retries, fairness
void apply_queue(const toml::table* q, Config& c) {
  auto ms = [&](std::string_view key, std::chrono::milliseconds& out, long long min) {
    if (auto v = (*q)[key].value<std::int64_t>()) {
      if (*v < min) throw std::runtime_error("queue." + std::string(key) + " must be at least " + std::to_string(min));
      out = std::chrono::milliseconds(*v);
    }
  };
  ms("lease_ms", c.queue.lease, 100);
  ms("reap_interval_ms", c.queue.reap_interval, 10);
  ms("housekeeper_lease_ms", c.queue.housekeeper_lease, 300);
  ms("retry_base_ms", c.queue.retry_base, 1);
  ms("retry_max_ms", c.queue.retry_max, 1);
  ms("cancel_poll_ms", c.queue.cancel_poll, 10);
  ms("priority_aging_ms", c.queue.priority_aging, 0);
  std::chrono::milliseconds trim = c.queue.trim_interval, drain = c.queue.drain_timeout;
  ms("trim_interval_ms", trim, 100);
  ms("drain_timeout_ms", drain, 0);
  c.queue.trim_interval = std::chrono::duration_cast<std::chrono::seconds>(trim);
  if (c.queue.trim_interval.count() < 1) c.queue.trim_interval = std::chrono::seconds(1);
  c.queue.drain_timeout = std::chrono::duration_cast<std::chrono::seconds>(drain);
  if (auto v = (*q)["marker_ttl_s"].value<std::int64_t>()) {
    if (*v < 60 || *v > 30ll * 24 * 3600) throw std::runtime_error("queue.marker_ttl_s must be in 60..2592000 (30 days)");
    c.queue.marker_ttl = std::chrono::seconds(*v);
  }
  if (auto v = (*q)["max_deliveries"].value<std::int64_t>()) {
    if (*v < 1 || *v > 100) throw std::runtime_error("queue.max_deliveries must be in 1..100");
    c.queue.max_deliveries = static_cast<unsigned>(*v);
  }
}

// [tenants.<name>]: per-tenant limits
void apply_tenants(const toml::table* ts, Config& c) {
  for (auto& [name, node] : *ts) {
    auto* t = node.as_table();
    if (!t) throw std::runtime_error("tenants." + std::string(name.str()) + " must be a table");
    TenantConfig tc = c.queue.tenants.count(std::string(name.str())) ? c.queue.tenants[std::string(name.str())] : TenantConfig{};
    if (auto v = (*t)["weight"].value<std::int64_t>()) {
      if (*v < 1 || *v > 1000) throw std::runtime_error("tenants." + std::string(name.str()) + ".weight must be in 1..1000");
      tc.weight = static_cast<unsigned>(*v);
    }
    if (auto v = (*t)["max_running"].value<std::int64_t>()) {
      if (*v < 0 || *v > 1024) throw std::runtime_error("tenants." + std::string(name.str()) + ".max_running must be in 0..1024");
      tc.max_running = static_cast<unsigned>(*v);
    }
    c.queue.tenants[std::string(name.str())] = tc;
  }
}

// A list of the harness's known levels, at least one: a typo would otherwise fail the header's
// making on the first job (and every build would go without it for an hour).
void take_pch_variants(const toml::table& k, std::vector<std::string>& out) {
  const auto* node = k.get("pch_variants");
  if (!node) return;
  const std::string bad = "kernelbench.pch_variants must be a non-empty list of \"O0\", \"O2\", \"O3\"";
  const auto* arr = node->as_array();
  if (!arr || arr->empty()) throw std::runtime_error(bad);
  out.clear();
  for (const auto& e : *arr) {
    const auto v = e.value<std::string>();
    if (!v || (*v != "O0" && *v != "O2" && *v != "O3")) throw std::runtime_error(bad);
    out.push_back(*v);
  }
}

// [kernelbench]: the harness, its caches, the trusted worker
void apply_kernelbench(const toml::table* k, Config& c) {
  take_path(*k, "python", c.kernelbench.python);
  take_path(*k, "harness_dir", c.kernelbench.harness_dir);
  take_path(*k, "cache_dir", c.kernelbench.cache_dir);
  take_path(*k, "kernel_trace_lib", c.kernelbench.kernel_trace_lib);
  take(*k, "cuda_arch_list", c.kernelbench.cuda_arch_list);
  take(*k, "precompiled_header", c.kernelbench.precompiled_header);
  take(*k, "light_headers", c.kernelbench.light_headers);
  take_pch_variants(*k, c.kernelbench.pch_variants);
  take(*k, "nvcc_halves", c.kernelbench.nvcc_halves);
  take(*k, "adjacent_baseline", c.kernelbench.adjacent_baseline);
  take(*k, "zygote", c.kernelbench.zygote);
  take_path(*k, "resume_lib", c.kernelbench.resume_lib);
  take_u32(*k, "compile_wall_ms", c.kernelbench.compile_wall_ms);
  take_u32(*k, "run_wall_ms", c.kernelbench.run_wall_ms);
  take_u32(*k, "reference_wall_ms", c.kernelbench.reference_wall_ms);
  take(*k, "worker_cache_fraction", c.kernelbench.worker_cache_fraction);
  if (!(c.kernelbench.worker_cache_fraction > 0 && c.kernelbench.worker_cache_fraction <= 0.9))
    throw std::runtime_error("kernelbench.worker_cache_fraction must be in (0, 0.9]");
  take_u32(*k, "worker_idle_seconds", c.kernelbench.worker_idle_seconds);
  take_number_in(*k, "kernelbench", "candidate_device_share", c.kernelbench.candidate_device_share, 0, 0.9,
                 "what the worker leaves");
  take_number_in(*k, "kernelbench", "admission_backfill_seconds", c.kernelbench.admission_backfill_seconds, 0, 3600,
                 "strict arrival order");
  take_number_in(*k, "kernelbench", "candidate_borrow_share", c.kernelbench.candidate_borrow_share, 0, 1,
                 "candidates borrow nothing");
  take_number_in(*k, "kernelbench", "cpu_rehearsal_device_gib", c.kernelbench.cpu_rehearsal_device_gib, 0, 4096,
                 "no admission on cpu");
  if (const auto* node = k->get("admission_largest_first")) {
    const auto* flag = node->as_boolean();
    if (!flag) throw std::runtime_error("kernelbench.admission_largest_first must be true or false");
    c.kernelbench.admission_largest_first = flag->get();
  }
}

void apply(const toml::table& root, Config& c) {
  if (auto d = root["daemon"].as_table()) {
    take(*d, "node", c.node);
    take_path(*d, "state_dir", c.state_dir);
    std::int64_t w = c.workers;
    take(*d, "workers", w);
    if (w < 1 || w > 1024) throw std::runtime_error("daemon.workers must be in 1..1024");
    c.workers = static_cast<unsigned>(w);
    std::int64_t ttl = c.result_ttl.count();
    take(*d, "result_ttl_s", ttl);
    c.result_ttl = std::chrono::seconds(ttl);
    take(*d, "log_level", c.log_level);
    take(*d, "keep_job_dirs", c.keep_job_dirs);
    std::string runner;
    take(*d, "runner_path", runner);
    if (!runner.empty()) c.runner_path = runner;
    take(*d, "opencl_device_type", c.opencl_device_type);
    take(*d, "role", c.role);
    if (c.role != "judge" && c.role != "build")
      throw std::runtime_error("daemon.role must be \"judge\" or \"build\", not \"" + c.role + "\"");
  }
  if (auto b = root["build"].as_table()) apply_build(*b, c.build);
  if (auto r = root["redis"].as_table()) apply_redis(*r, c.redis);
  if (auto s = root["sandbox"].as_table()) {
    if (auto v = (*s)["host_uid"].value<std::int64_t>()) c.sandbox.host_uid = static_cast<std::uint32_t>(*v);
    if (auto v = (*s)["host_gid"].value<std::int64_t>()) c.sandbox.host_gid = static_cast<std::uint32_t>(*v);
    if (auto arr = (*s)["extra_ro_binds"].as_array())
      for (auto& e : *arr)
        if (auto p = e.value<std::string>()) c.sandbox.extra_ro_binds.push_back(*p);
    apply_sandbox_limits(*s, c.sandbox);
  }
  if (auto node = root.get("toolchain")) {
    auto* t = node->as_table();
    if (!t) throw std::runtime_error("toolchain must be a table");
    if (auto a = string_key(*t, "toolchain.cuda_arch", "cuda_arch")) {
      // the same form $KJUDGE_CUDA_ARCH takes; empty = detect
      if (!a->empty() && !std::regex_match(*a, std::regex("sm_[0-9]{2,3}[af]?")))
        throw std::runtime_error("toolchain.cuda_arch must look like \"sm_90\" or \"sm_90a\" (or be empty), not \"" +
                                 *a + "\"");
      c.toolchain.cuda_arch = *a;
    }
  }
  if (auto q = root["queue"].as_table()) apply_queue(q, c);
  if (auto ts = root["tenants"].as_table()) apply_tenants(ts, c);
  if (auto m = root["metrics"].as_table()) {
    take(*m, "address", c.metrics.address);
    std::int64_t port = c.metrics.port;
    take(*m, "port", port);
    if (port < 0 || port > 65535) throw std::runtime_error("metrics.port must be in 0..65535");
    c.metrics.port = static_cast<int>(port);
  }
  if (auto k = root["kernelbench"].as_table()) apply_kernelbench(k, c);
  if (auto l = root["limits"].as_table()) {
    take_u32(*l, "compile_wall_ms", c.limits.compile_wall_ms);
    take_u32(*l, "run_wall_ms", c.limits.run_wall_ms);
    take_u32(*l, "max_compile_wall_ms", c.limits.max_compile_wall_ms);
    take_u32(*l, "max_run_wall_ms", c.limits.max_run_wall_ms);
    take_u64(*l, "output_bytes", c.limits.output_bytes);
    take_u64(*l, "max_job_bytes", c.limits.max_job_bytes);
    take_u64(*l, "min_free_bytes", c.limits.min_free_bytes);
    take_u64(*l, "min_free_inodes", c.limits.min_free_inodes);
  }
  if (auto t = root["testing"].as_table()) take(*t, "allow_trivial_switches", c.testing.allow_trivial_switches);
}

void apply_file(const std::filesystem::path& file, Config& c) {
  try {
    apply(toml::parse_file(file.string()), c);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(file.string() + ": " + std::string(e.description()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

}  // namespace

std::string torch_arch_from_sm(const std::string& sm) {
  std::smatch m;
  if (!std::regex_match(sm, m, std::regex("sm_([0-9]{1,2})([0-9])[af]?"))) return "";
  return m[1].str() + "." + m[2].str();
}

Config load_config(const std::optional<std::filesystem::path>& file) {
  Config c;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.node = host;
  if (file) {
    apply_file(*file, c);
    std::filesystem::path dropins = file->string() + ".d";
    if (std::filesystem::is_directory(dropins)) {
      std::vector<std::filesystem::path> parts;
      for (auto& e : std::filesystem::directory_iterator(dropins))
        if (e.path().extension() == ".toml") parts.push_back(e.path());
      std::sort(parts.begin(), parts.end());
      for (auto& p : parts) apply_file(p, c);
    }
  }
  if (c.kernelbench.cuda_arch_list.empty() && !c.toolchain.cuda_arch.empty())
    c.kernelbench.cuda_arch_list = torch_arch_from_sm(c.toolchain.cuda_arch);
  // Said on every load (start and SIGHUP) while it holds: nothing else shows that sandboxes lost their filter.
  if (c.sandbox.seccomp == SeccompMode::Off)
    log::warn("config.seccomp_off",
              {{"warning", "SECCOMP IS OFF: sandboxed code may make any system call. For debugging only; "
                           "never on a node that judges untrusted code."}});
  else if (c.sandbox.seccomp == SeccompMode::Log)
    log::warn("config.seccomp_log",
              {{"warning", "seccomp is in log mode: forbidden system calls are allowed and only recorded. "
                           "For debugging only; never on a node that judges untrusted code."}});
  if (c.runner_path.empty()) c.runner_path = self_dir() / "kjudge-runner";
  if (c.kernelbench.resume_lib.empty()) c.kernelbench.resume_lib = self_dir().parent_path() / "lib" / "libkjsandbox_resume.so";
  if (c.kernelbench.harness_dir.empty()) {
    // Installed: <prefix>/share/kjudge/python next to <prefix>/bin; a build tree: the sources.
    const auto installed = self_dir().parent_path() / "share" / "kjudge" / "python";
    c.kernelbench.harness_dir = std::filesystem::exists(installed / "kjudge_harness") ? installed
                                                                                     : std::filesystem::path(KJUDGE_SOURCE_DIR) / "python";
  }
  if (c.kernelbench.kernel_trace_lib.empty()) c.kernelbench.kernel_trace_lib = self_dir() / "libkjudge_kernel_trace.so";
  return c;
}

std::filesystem::path self_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path(); }

}  // namespace kj
