// What the legality trace reports and how it classifies (kernelbench/legality.h fills
// them from the candidate's harness and kernelbench/legality.json): plain facts, here so that
// verdict.cpp's decide_legality weighs them without including the KernelBench layer above it.
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

}  // namespace kj
