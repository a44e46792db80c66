// A native build's compiler output as a candidate can act on: the first error with its file and
// line (gcc/clang `file:line:col: error: text`, nvcc `file(line): error: text`, NVRTC/OpenCL's
// clang form), and the log without the sandbox's /job/ prefix, which names the judge's layout,
// not the candidate's file.
#pragma once

#include <optional>
#include <string>

namespace kj {

struct CompileDiagnostic {
  std::string file;  // as the compiler named it, /job/ removed
  int line = 0;
  int column = 0;  // 0: the compiler gave none (nvcc)
  std::string text;
};

std::optional<CompileDiagnostic> first_compile_error(const std::string& log);
std::string without_sandbox_paths(const std::string& log);
// "error at kernel.cpp:5:58: 'bias' was not declared in this scope" (no column when there is none)
std::string describe(const CompileDiagnostic& d);

}  // namespace kj
