#include "pipeline/verdict/feedback.h"

#include "pipeline/verdict/wrong_output_feedback.h"

#include <fmt/format.h>

#include <sstream>
#include <vector>

namespace kj {
namespace v1 = kjudge::v1;

std::string compile_log_excerpt(const std::string& log, std::size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<std::string> picked;
  for (std::size_t i = 0; i < lines.size() && picked.size() < max_lines; ++i) {
    if (lines[i].find("error") == std::string::npos) continue;
    picked.push_back(lines[i]);
    // the source line and caret that gcc/clang print under an error
    for (std::size_t k = i + 1; k < lines.size() && k <= i + 2 && picked.size() < max_lines; ++k)
      if (lines[k].starts_with(" ")) picked.push_back(lines[k]);
  }
  if (picked.empty())  // no "error" marker: the tail is the best guess
    for (std::size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
      picked.push_back(lines[i]);
  std::string out;
  for (auto& p : picked) out += p + "\n";
  return out;
}

namespace {
// What a native candidate's fatal signal (verdict.cpp: "crashed: killed by SIGSEGV") usually means.
std::string crash_hint(const std::string& message) {
  static const std::pair<const char*, const char*> kHints[] = {
      {"SIGSEGV", " An invalid memory access: a null, dangling or out-of-bounds pointer, or a write to an input."},
      {"SIGBUS", " A misaligned or out-of-range memory access (e.g. a pointer cast to a wider type)."},
      {"SIGFPE", " An arithmetic fault: an integer division or remainder by zero."},
      {"SIGABRT", " abort(): a failed assert, an uncaught C++ exception or a corrupted heap."},
      {"SIGILL", " An illegal instruction: code built for features this CPU lacks, or __builtin_trap()."}};
  for (const auto& [sig, hint] : kHints)
    if (message.find(sig) != std::string::npos) return hint;
  return "";
}
}  // namespace

std::string make_feedback(const v1::Result& r, const std::string& detail) {
  switch (r.status()) {
    case v1::OK: {
      const auto& p = r.performance();
      if (p.candidate().trials() == 0) return "Correct on every input set (timing skipped).";
      std::string out = fmt::format("Correct on every input set. {:.2f}x the reference ({:.4f} ms vs {:.4f} ms median over {} trials).",
                         p.speedup(), p.candidate().median_ms(), p.baseline().median_ms(), p.candidate().trials());
      if (p.achieved_gbps() > 0 && p.peak_gbps() > 0) {
        const double frac = p.achieved_gbps() / p.peak_gbps();
        out += fmt::format(" Performance hint: the kernel moves its tensors at {:.0f} GB/s, {:.0f}% of the {:.0f} GB/s "
                           "the device's memory sustained here{}",
                           p.achieved_gbps(), 100 * frac, p.peak_gbps(),
                           frac > 0.7 ? " — it is near the bandwidth roof; gains now come from moving fewer bytes."
                                      : " — a memory-bound kernel has headroom (coalescing, vector loads, fewer passes).");
      }
      return out;
    }
    case v1::COMPILE_ERROR:
      // detail: the harness's first error at the candidate's line (kernelbench/build.cpp); the
      // raw log's excerpt only where there is none (native jobs, a build killed by a limit)
      if (!detail.empty()) return "Compilation failed:\n" + detail;
      return "Compilation failed: " + r.message() + "\n" + compile_log_excerpt(r.compile().log());
    case v1::INCORRECT: return wrong_output_feedback(r);
    case v1::TIMEOUT: return r.message() + ". Check for loops that never end or work far beyond the task's size.";
    case v1::CUDA_FAULT:
      return r.message() + ". The kernel faulted on the device: check its index arithmetic against the tensor sizes " +
             "and the launch configuration (grid x block must cover the output exactly once)." +
             (detail.empty() ? "" : "\n" + detail);
    case v1::RUNTIME_ERROR:
      // detail: the exception and the candidate's own frames (python/kjudge_harness/diagnosis.py)
      if (!detail.empty()) return "The candidate raised an error while running:\n" + detail;
      return r.message() + "." + crash_hint(r.message());
    case v1::OUTPUT_LIMIT:
    case v1::MEMORY_LIMIT: {
      std::string out = r.message() + ".";
      if (!detail.empty()) out += "\n" + detail;
      return out;
    }
    case v1::CHEAT: {
      const std::string cls = kjudge::v1::CheatClass_Name(r.cheat_class());
      return fmt::format("CHEAT ({}): {}. This scores below a compile failure; the judge checks inputs, "
                         "re-checks timed calls and keeps its own clock.",
                         cls.substr(cls.find('_') + 1), r.message());
    }
    case v1::SUSPICIOUS: return fmt::format("SUSPICIOUS timing: {}.", r.message());
    default: return r.message();
  }
}

}  // namespace kj
