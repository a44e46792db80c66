// The legality trace's facts (reported by the candidate's harness) classified with the versioned
// data in kernelbench_legality.json: which framework ops ran inside ModelNew.forward that are
// compute rather than plumbing, and which GPU kernels were the candidate's own, a library's or the
// framework's. The verdict itself is decided in verdict.cpp.
#pragma once

#include <string>
#include <vector>

namespace kj {

struct LegalityTrace {
  std::vector<std::string> ops;      // dispatcher op names, e.g. "aten::mm", "myext::relu"
  std::vector<std::string> kernels;  // GPU kernel names from the profiler (empty on the CPU)
  int ext_calls = 0;                 // calls into the candidate's load_inline modules
  bool tracer_ok = false;
  std::string tracer_problem;
  bool profiled_kernels = false;     // a GPU run: kernel records were taken
};

struct LegalityClass {
  std::vector<std::string> forbidden_ops;  // distinct, in first-seen order
  unsigned custom_ops = 0;                 // ops in the candidate's own namespaces
  unsigned custom_kernels = 0, library_kernels = 0, framework_kernels = 0;
  std::vector<std::string> library_kernel_names;
};

const std::string& legality_policy_version();
LegalityClass classify_legality(const LegalityTrace& trace);

}  // namespace kj
