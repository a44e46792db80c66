#include "pipeline/verdict/wrong_output_feedback.h"

#include <fmt/format.h>

#include <vector>

namespace kj {
namespace v1 = kjudge::v1;

namespace {

// The first failing output in full: a repair turn fixes one thing at a time.
std::string describe(const v1::CorrectnessSet& set, const v1::TensorComparison& o) {
  std::string out = fmt::format("Input set '{}', output '{}': ", set.name(), o.arg());
  if (o.elements() == 0 && !o.problem().empty()) return out + o.problem() + ".";  // shape or dtype
  out += fmt::format("{} of {} elements wrong (tolerance atol {:.1g} rtol {:.1g}).", o.mismatches(), o.elements(),
                     o.atol(), o.rtol());
  const auto count = [](std::uint64_t n, const char* what) {
    return fmt::format(" {} {} {} in your output.", n, n == 1 ? "element is" : "elements are", what);
  };
  if (o.nan_outputs()) out += count(o.nan_outputs(), "NaN");
  if (o.inf_outputs()) out += count(o.inf_outputs(), "Inf");
  // the error figures cover finite elements only: with every wrong one NaN/Inf they would read 0.
  // Beside the worst elements' values they would give one expected value away (got ± max error).
  if (o.mismatches() > o.nan_outputs() + o.inf_outputs() && o.worst_size() == 0)
    out += fmt::format(" Over the finite elements: max abs error {:.3g}, max rel error {:.3g}.", o.max_abs_error(),
                       o.max_rel_error());
  if (o.worst_size()) {
    out += " Worst elements:";
    for (const auto& w : o.worst())
      out += fmt::format("\n  {} got {}, expected {}", w.position(), w.got(), w.expected());
  } else if (o.first_mismatch_index() >= 0) {
    out += fmt::format(" First wrong flat index {}.", o.first_mismatch_index());
  }
  if (!o.problem().empty() && o.nan_outputs() == 0) out += "\n" + o.problem() + ".";
  return out;
}

}  // namespace

std::string wrong_output_feedback(const v1::Result& r) {
  std::vector<std::string> others;
  std::string first;
  int failing = 0;
  for (const auto& s : r.correctness())
    for (const auto& o : s.outputs()) {
      if (o.passed()) continue;
      ++failing;
      if (first.empty()) first = describe(s, o);
      else others.push_back(fmt::format("'{}' ({} of {} wrong)", s.name(), o.mismatches(), o.elements()));
    }
  if (!failing) return "Wrong output.";
  std::string out = fmt::format("Wrong output on {} of {} input sets. {}", failing, r.correctness_size(), first);
  if (!others.empty()) {
    out += "\nAlso wrong on:";
    for (const auto& o : others) out += " " + o;
  }
  return out;
}

}  // namespace kj
