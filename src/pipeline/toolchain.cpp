#include "pipeline/toolchain.h"

#include <fmt/format.h>

namespace kj {

namespace {

// Flags a job may add. Anything that loads code into the compiler (-fplugin, -wrapper, -B, @file),
// reads arbitrary files (-include, -I outside the job) or changes outputs (-o) is not here.
const std::vector<std::string> kCommonFlags = {
    "-O[0-3s]", "-Ofast", "-march=native", "-mtune=native", "-ffast-math", "-funroll-loops", "-fopenmp-simd",
    "-fno-math-errno", "-std=c\\+\\+(14|17|20|23)", "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?",
    "-m(avx|avx2|fma|avx512f|avx512bw|avx512vl|sse4\\.2|f16c|bmi2)"};

const std::vector<Toolchain>& table() {
  static const std::vector<Toolchain> t = {
      {kjudge::v1::CPP, "kernel.cpp", "kernel.so",
       {"/usr/bin/g++", "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=default",
        "-Wl,--no-undefined",  // a missing symbol is the candidate's compile error, not a load failure later
        "-o", "/job/kernel.so",
        "/job/kernel.cpp"},
       kCommonFlags, ""},
      {kjudge::v1::OPENCL, "kernel.cl", "kernel.bin", {},
       {"-cl-fast-relaxed-math", "-cl-mad-enable", "-cl-std=CL(1\\.2|2\\.0|3\\.0)",
        "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?"},
       "opencl"},
  };
  return t;
}

}  // namespace

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
