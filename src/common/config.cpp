#include "common/config.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace kj {
namespace {

template <typename T>
void take(const toml::table& t, std::string_view key, T& out) {
  if (auto v = t[key].value<T>()) out = *v;
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

void apply(const toml::table& root, Config& c) {
  if (auto d = root["daemon"].as_table()) {
    take(*d, "node", c.node);
    std::string s;
    take(*d, "state_dir", s);
    if (!s.empty()) c.state_dir = s;
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
  }
  if (auto r = root["redis"].as_table()) {
    take(*r, "url", c.redis.url);
    take(*r, "username", c.redis.username);
    take(*r, "password", c.redis.password);
    std::int64_t p = c.redis.partition;
    take(*r, "partition", p);
    c.redis.partition = static_cast<int>(p);
  }
  if (auto s = root["sandbox"].as_table()) {
    if (auto v = (*s)["host_uid"].value<std::int64_t>()) c.sandbox.host_uid = static_cast<std::uint32_t>(*v);
    if (auto v = (*s)["host_gid"].value<std::int64_t>()) c.sandbox.host_gid = static_cast<std::uint32_t>(*v);
    if (auto arr = (*s)["extra_ro_binds"].as_array())
      for (auto& e : *arr)
        if (auto p = e.value<std::string>()) c.sandbox.extra_ro_binds.push_back(*p);
  }
  if (auto q = root["queue"].as_table()) {
    auto ms = [&](std::string_view key, std::chrono::milliseconds& out, long long min) {
      if (auto v = (*q)[key].value<std::int64_t>()) {
        if (*v < min) throw std::runtime_error("queue." + std::string(key) + " must be at least " + std::to_string(min));
        out = std::chrono::milliseconds(*v);
      }
    };
    ms("lease_ms", c.queue.lease, 100);
    ms("reap_interval_ms", c.queue.reap_interval, 10);
    ms("retry_base_ms", c.queue.retry_base, 1);
    ms("retry_max_ms", c.queue.retry_max, 1);
    ms("cancel_poll_ms", c.queue.cancel_poll, 10);
    std::chrono::milliseconds trim = c.queue.trim_interval, drain = c.queue.drain_timeout;
    ms("trim_interval_ms", trim, 100);
    ms("drain_timeout_ms", drain, 0);
    c.queue.trim_interval = std::chrono::duration_cast<std::chrono::seconds>(trim);
    if (c.queue.trim_interval.count() < 1) c.queue.trim_interval = std::chrono::seconds(1);
    c.queue.drain_timeout = std::chrono::duration_cast<std::chrono::seconds>(drain);
    if (auto v = (*q)["max_deliveries"].value<std::int64_t>()) {
      if (*v < 1 || *v > 100) throw std::runtime_error("queue.max_deliveries must be in 1..100");
      c.queue.max_deliveries = static_cast<unsigned>(*v);
    }
  }
  if (auto ts = root["tenants"].as_table()) {
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
  if (auto m = root["metrics"].as_table()) {
    take(*m, "address", c.metrics.address);
    std::int64_t port = c.metrics.port;
    take(*m, "port", port);
    if (port < 0 || port > 65535) throw std::runtime_error("metrics.port must be in 0..65535");
    c.metrics.port = static_cast<int>(port);
  }
  if (auto k = root["kernelbench"].as_table()) {
    std::string s;
    take(*k, "python", s);
    if (!s.empty()) c.kernelbench.python = s;
    s.clear();
    take(*k, "harness_dir", s);
    if (!s.empty()) c.kernelbench.harness_dir = s;
    s.clear();
    take(*k, "cache_dir", s);
    if (!s.empty()) c.kernelbench.cache_dir = s;
    take(*k, "cuda_arch_list", c.kernelbench.cuda_arch_list);
    take(*k, "precompiled_header", c.kernelbench.precompiled_header);
    take_u32(*k, "compile_wall_ms", c.kernelbench.compile_wall_ms);
    take_u32(*k, "run_wall_ms", c.kernelbench.run_wall_ms);
  }
  if (auto l = root["limits"].as_table()) {
    take_u32(*l, "compile_wall_ms", c.limits.compile_wall_ms);
    take_u32(*l, "run_wall_ms", c.limits.run_wall_ms);
    take_u32(*l, "max_compile_wall_ms", c.limits.max_compile_wall_ms);
    take_u32(*l, "max_run_wall_ms", c.limits.max_run_wall_ms);
    take_u64(*l, "output_bytes", c.limits.output_bytes);
    take_u64(*l, "max_job_bytes", c.limits.max_job_bytes);
  }
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
  if (c.runner_path.empty()) c.runner_path = self_dir() / "kjudge-runner";
  if (c.kernelbench.harness_dir.empty()) {
    // Installed: <prefix>/share/kjudge/python next to <prefix>/bin; a build tree: the sources.
    const auto installed = self_dir().parent_path() / "share" / "kjudge" / "python";
    c.kernelbench.harness_dir = std::filesystem::exists(installed / "kjudge_harness") ? installed
                                                                                     : std::filesystem::path(KJUDGE_SOURCE_DIR) / "python";
  }
  return c;
}

std::filesystem::path self_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path(); }

}  // namespace kj
