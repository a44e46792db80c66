#include "pipeline/run/sandbox_profiles.h"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <stdexcept>

#include "pipeline/run/cpu_pressure.h"
#include "pipeline/run/workspace.h"

namespace kj {

namespace {

kjsandbox::Seccomp::Mode seccomp_mode(SeccompMode m) {
  switch (m) {
    case SeccompMode::Log: return kjsandbox::Seccomp::Mode::Log;
    case SeccompMode::Off: return kjsandbox::Seccomp::Mode::Off;
    case SeccompMode::Enforce: break;
  }
  return kjsandbox::Seccomp::Mode::Enforce;
}

kjsandbox::Policy base_policy(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                              std::uint32_t wall_ms) {
  kjsandbox::Policy p;
  p.argv = std::move(argv);
  p.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}, {"TMPDIR", "/tmp"}};
  // A sanitizer build of kjudge runs a sanitizer build of the runner: keep its settings.
  if (const char* asan = std::getenv("ASAN_OPTIONS")) p.env["ASAN_OPTIONS"] = asan;
  p.cwd = "/job";
  p.binds = kjsandbox::default_system_binds();
  for (const auto& extra : cfg.sandbox.extra_ro_binds) p.binds.push_back({extra, "", false});
  p.binds.push_back({job_dir.string(), "/job", true});
  p.host_uid = sandbox_host_uid(cfg.sandbox.host_uid);
  p.host_gid = sandbox_host_gid(cfg.sandbox.host_gid);
  p.wall_limit = std::chrono::milliseconds(wall_ms);
  // what a loaded node took from the step (pipeline/run/cpu_pressure.h), at most its limit again
  p.wall_extension = cpu_pressure_extension(p.wall_limit);
  p.output_limit_bytes = cfg.limits.output_bytes;
  p.seccomp.mode = seccomp_mode(cfg.sandbox.seccomp);
  return p;
}

// An NVIDIA OpenCL platform is registered with the ICD loader on this node.
bool nvidia_opencl_icd() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/etc/OpenCL/vendors", ec))
    if (e.path().filename().string().find("nvidia") != std::string::npos) return true;
  return false;
}

// Adds the device profile `name` for this node's GPU. Directory binds already visible through a
// read-only bind of a parent (/usr/local/cuda under /usr, where it may be a symlink) are left out:
// a second mount on a symlinked target is at best redundant.
void add_device(const Config& cfg, kjsandbox::Policy& p, const std::string& name) {
  // Loaded for every run, not cached: /dev/nvidia-uvm appears only after the host's first CUDA
  // process, and a profile loaded before that would lack it for good.
  kjsandbox::DeviceProfile prof = kjsandbox::load_device_profile(name, gpu_index(cfg));
  std::erase_if(prof.binds, [&](const kjsandbox::BindMount& b) {
    for (const auto& have : p.binds) {
      const std::string& parent = have.target.empty() ? have.source : have.target;
      if (have.writable || b.writable || !have.target.empty() || parent.empty()) continue;
      if (b.source.size() > parent.size() && b.source.compare(0, parent.size(), parent) == 0 &&
          b.source[parent.size()] == '/' && (b.target.empty() || b.target == b.source))
        return true;
    }
    return false;
  });
  kjsandbox::apply_device_profile(prof, p);
}

}  // namespace

int gpu_index(const Config& cfg) {
  if (cfg.sandbox.gpu_index) return *cfg.sandbox.gpu_index;
  if (const char* env = std::getenv("KJUDGE_GPU_INDEX"); env && *env) {
    if (!std::regex_match(env, std::regex("[0-9]{1,3}")))
      throw std::runtime_error(std::string("KJUDGE_GPU_INDEX must be a GPU's device minor (0-999), not '") + env + "'");
    return std::atoi(env);
  }
  // The lowest /dev/nvidiaN present: a container given one GPU of a larger host may only have /dev/nvidia3.
  const auto minors = nvidia_device_minors();
  return minors.empty() ? 0 : minors.front();
}

std::vector<int> nvidia_device_minors() {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 6 && n.size() <= 9 && n.rfind("nvidia", 0) == 0 &&
        n.find_first_not_of("0123456789", 6) == std::string::npos)
      out.push_back(std::atoi(n.c_str() + 6));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> node_gpus(const Config& cfg) {
  if (!cfg.sandbox.gpus.empty()) return cfg.sandbox.gpus;
  if (cfg.sandbox.all_gpus) {
    auto all = nvidia_device_minors();
    if (!all.empty()) return all;
  }
  return {gpu_index(cfg)};
}

kjsandbox::Policy compile_policy(const Config& cfg, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                                 std::uint32_t wall_ms) {
  auto p = base_policy(cfg, job_dir, std::move(argv), wall_ms);
  p.rlimits.address_space_bytes = 4ull << 30;  // template bombs (nvcc is fine with 4 GiB of address space)
  p.cgroup.memory_bytes = cfg.sandbox.compile_memory_bytes;
  p.cgroup.pids = cfg.sandbox.compile_pids;
  p.cgroup.cpu_quota = cfg.sandbox.compile_cpus;
  // Builds run behind the timed loops: a run slot keeps the default weight (100), so on a node full
  // of builds the loop's launch thread is not stretched. A weight, not nice: every sandbox has its
  // own cgroup, and CFS group scheduling shares the CPU between cgroups before nice counts.
  p.cgroup.cpu_weight = cfg.sandbox.compile_cpu_weight;
  // No device profile: compile slots see no GPU. nvcc (/usr/local/cuda, a symlink to
  // /usr/local/cuda-N.M on most hosts) and its host compiler are under the read-only /usr bind;
  // a toolkit elsewhere goes in sandbox.extra_ro_binds.
  return p;
}

kjsandbox::Policy run_policy(const Config& cfg, const std::filesystem::path& job_dir,
                             const std::filesystem::path& inputs_dir, std::vector<std::string> argv,
                             std::uint32_t wall_ms, std::uint64_t output_bytes, const std::string& device_profile) {
  auto p = base_policy(cfg, job_dir, std::move(argv), wall_ms);
  p.output_limit_bytes = output_bytes;
  p.cgroup.memory_bytes = cfg.sandbox.run_memory_bytes;
  p.cgroup.pids = cfg.sandbox.run_pids;
  p.cgroup.cpu_quota = cfg.sandbox.run_cpus;
  p.binds.push_back({cfg.runner_path.string(), kRunnerInSandbox, false});
  if (!inputs_dir.empty()) p.binds.push_back({inputs_dir.string(), "/inputs", false});
  if (device_profile == "opencl") {
    // PoCL compiles kernels at run time and caches them; keep its cache inside the job's tmpfs.
    p.env["POCL_CACHE_DIR"] = "/tmp/pocl";
    if (!cfg.opencl_device_type.empty()) p.env["KJUDGE_OPENCL_DEVICE_TYPE"] = cfg.opencl_device_type;
    // ICD vendor files, and the CPU topology PoCL's hwloc reads to size its thread pool.
    for (const char* path : {"/etc/OpenCL", "/sys/devices/system/cpu"})
      if (std::filesystem::exists(path)) p.binds.push_back({path, "", false});
    // On a GPU node with NVIDIA's OpenCL ICD, the platform library needs the GPU's device nodes
    // and the driver libraries: the nvidia-cuda profile (which binds /etc/OpenCL/vendors too).
    if (nvidia_opencl_icd()) add_device(cfg, p, "nvidia-cuda");
  } else if (!device_profile.empty()) {
    add_device(cfg, p, device_profile);  // "nvidia-cuda": /dev/nvidia<gpu>, ctl, uvm, libcuda, /proc/driver
  }
  return p;
}

}  // namespace kj
