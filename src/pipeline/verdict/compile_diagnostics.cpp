#include "pipeline/verdict/compile_diagnostics.h"

#include <fmt/format.h>

#include <regex>
#include <sstream>

namespace kj {

namespace {
constexpr std::string_view kSandboxDir = "/job/";
}

std::string without_sandbox_paths(const std::string& log) {
  std::string out;
  out.reserve(log.size());
  for (std::size_t i = 0; i < log.size();) {
    const bool at_path_start = i == 0 || log[i - 1] == '\n' || log[i - 1] == ' ' || log[i - 1] == '"' ||
                               log[i - 1] == '\'' || log[i - 1] == '(';
    if (at_path_start && log.compare(i, kSandboxDir.size(), kSandboxDir) == 0) {
      i += kSandboxDir.size();
      continue;
    }
    out += log[i++];
  }
  return out;
}

std::optional<CompileDiagnostic> first_compile_error(const std::string& log) {
  // gcc, clang, NVRTC, OpenCL: file:line[:col]: [fatal ]error: text;  nvcc: file(line): [catastrophic ]error: text
  static const std::regex gnu(R"(^(.+?):(\d+):(?:(\d+):)? (?:fatal )?error: (.*)$)");
  static const std::regex nvcc(R"(^(.+?)\((\d+)\): (?:catastrophic )?error: (.*)$)");
  std::istringstream in(without_sandbox_paths(log));
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, gnu))
      return CompileDiagnostic{m[1], std::stoi(m[2]), m[3].matched ? std::stoi(m[3]) : 0, m[4]};
    if (std::regex_match(l, m, nvcc)) return CompileDiagnostic{m[1], std::stoi(m[2]), 0, m[3]};
  }
  return std::nullopt;
}

std::string describe(const CompileDiagnostic& d) {
  const std::string where =
      d.column ? fmt::format("{}:{}:{}", d.file, d.line, d.column) : fmt::format("{}:{}", d.file, d.line);
  return fmt::format("error at {}: {}", where, d.text);
}

}  // namespace kj
