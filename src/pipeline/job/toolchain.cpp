#include "pipeline/job/toolchain.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace kj {

namespace {

// Flags a job may add. Anything that loads code into the compiler (-fplugin, -wrapper, -B, @file),
// reads arbitrary files (-include, -I outside the job) or changes outputs (-o) is not here.
const std::vector<std::string> kCommonFlags = {
    "-O[0-3s]", "-Ofast", "-march=native", "-mtune=native", "-ffast-math", "-funroll-loops", "-fopenmp-simd",
    "-fno-math-errno", "-std=c\\+\\+(14|17|20|23)", "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?",
    "-m(avx|avx2|fma|avx512f|avx512bw|avx512vl|sse4\\.2|f16c|bmi2)"};

// nvcc: optimisation and numerics switches only; no -Xcompiler passthrough, no libraries, no -ccbin.
const std::vector<std::string> kCudaFlags = {
    "-O[0-3]", "--?use_fast_math", "-lineinfo", "--?extra-device-vectorization", "-std=c\\+\\+(17|20)",
    "--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)", "--?maxrregcount=[0-9]{1,3}", "-Xptxas=-O[0-3]",
    "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?"};

const std::vector<Toolchain>& table() {
  static const std::vector<Toolchain> t = {
      {kjudge::v1::CPP, "kernel.cpp", "kernel.so",
       {"/usr/bin/g++", "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=default",
        "-Wl,--no-undefined",  // a missing symbol is the candidate's compile error, not a load failure later
        "-o", "/job/kernel.so",
        "/job/kernel.cpp"},
       kCommonFlags, "", {}, ""},
      {kjudge::v1::OPENCL, "kernel.cl", "kernel.bin", {},
       {"-cl-fast-relaxed-math", "-cl-mad-enable", "-cl-std=CL(1\\.2|2\\.0|3\\.0)",
        "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?"},
       "opencl", {}, ""},
      {kjudge::v1::CUDA, "kernel.cu", "kernel.fatbin",
       {"/usr/local/cuda/bin/nvcc", "-O3", "-std=c++17", "-fatbin", "-arch={arch}", "-o", "/job/kernel.fatbin",
        "/job/kernel.cu"},
       kCudaFlags, "nvidia-cuda",
       {"/usr/local/cuda/bin/nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-arch={arch}",
        "-o", "/job/kernel.so", "/job/kernel.cu"},
       "kernel.so"},
  };
  return t;
}

}  // namespace

std::string parse_compute_cap(const std::string& out) {
  const auto line = out.substr(0, out.find('\n'));
  const auto dot = line.find('.');
  if (dot == std::string::npos || dot == 0) return "";
  std::string major = line.substr(0, dot), minor;
  for (std::size_t i = dot + 1; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i)
    minor += line[i];
  for (char c : major)
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  if (minor.empty()) return "";
  return "sm_" + major + minor;
}

std::string cuda_arch() {
  static std::once_flag once;
  static std::string arch;
  std::call_once(once, [] {
    if (const char* env = std::getenv("KJUDGE_CUDA_ARCH"); env && std::regex_match(env, std::regex("sm_[0-9]{2,3}[af]?"))) {
      arch = env;
      return;
    }
    std::string out;
    if (FILE* p = ::popen("nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null", "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof(buf), p)) out += buf;
      ::pclose(p);
    }
    arch = parse_compute_cap(out);
    if (arch.empty()) arch = "sm_90";  // fallback: Hopper
  });
  return arch;
}

std::string cuda_arch(const Config& cfg) { return cfg.toolchain.cuda_arch.empty() ? cuda_arch() : cfg.toolchain.cuda_arch; }

namespace {
// cfg may be null. The arch is looked up only when "{arch}" occurs: nvidia-smi is slow to ask.
std::vector<std::string> expand_argv(const Toolchain& tc, const kjudge::v1::NativeTask& task, const Config* cfg) {
  const bool host = !tc.host_launch_argv.empty() && task.launch().grid().empty();
  std::vector<std::string> argv = host ? tc.host_launch_argv : tc.compile_argv;
  if (argv.empty()) return argv;
  auto pos = std::find(argv.begin(), argv.end(), "-o");
  argv.insert(pos, task.compile_flags().begin(), task.compile_flags().end());
  for (auto& a : argv)
    if (auto at = a.find("{arch}"); at != std::string::npos) a.replace(at, 6, cfg ? cuda_arch(*cfg) : cuda_arch());
  return argv;
}
}  // namespace

std::vector<std::string> Toolchain::argv_for(const kjudge::v1::NativeTask& task, const Config& cfg) const {
  return expand_argv(*this, task, &cfg);
}

std::vector<std::string> Toolchain::argv_for(const kjudge::v1::NativeTask& task) const {
  return expand_argv(*this, task, nullptr);
}

std::string Toolchain::artifact_for(const kjudge::v1::NativeTask& task) const {
  return !host_launch_argv.empty() && task.launch().grid().empty() ? host_launch_artifact : artifact_name;
}

const Toolchain* toolchain_for(kjudge::v1::Language language) {
  for (const auto& t : table())
    if (t.language == language) return &t;
  return nullptr;
}

std::optional<std::string> Toolchain::check_flags(const google::protobuf::RepeatedPtrField<std::string>& flags) const {
  if (flags.size() > 32) return "at most 32 compile flags";
  for (const auto& f : flags) {
    bool ok = false;
    for (const auto& p : allowed_flag_patterns)
      if (std::regex_match(f, std::regex(p))) ok = true;
    if (!ok) return fmt::format("compile flag '{}' is not allowed for {}", f, kjudge::v1::Language_Name(language));
  }
  return std::nullopt;
}

std::vector<std::string> Toolchain::build_argv(const google::protobuf::RepeatedPtrField<std::string>& flags) const {
  std::vector<std::string> argv = compile_argv;
  if (argv.empty()) return argv;
  // job flags go before -o so they apply to the compilation
  auto pos = std::find(argv.begin(), argv.end(), "-o");
  argv.insert(pos, flags.begin(), flags.end());
  return argv;
}

}  // namespace kj
