#include "cli/result_view.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

namespace kj::cli {
namespace v1 = kjudge::v1;

std::string summary_line(const v1::Result& r) {
  std::string line = fmt::format("{:<28} {:<14}", r.job_id(), v1::Verdict_Name(r.status()));
  const auto& p = r.performance();
  if (r.status() == v1::OK && p.candidate().trials() > 0)
    line += fmt::format(" speedup {:>6.2f}x  candidate {:.4f} ms  reference {:.4f} ms  ", p.speedup(),
                        p.candidate().median_ms(), p.baseline().median_ms());
  if (r.has_reward() && r.reward().policy_version() != "none") line += fmt::format(" reward {:+.3f}", r.reward().value());
  if (r.status() != v1::OK && !r.message().empty()) line += "  " + r.message();
  return line;
}

std::string text_view(const v1::Result& r) {
  std::string out = summary_line(r) + "\n";
  if (!r.feedback().empty()) out += r.feedback() + "\n";
  return out;
}

std::string json_view(const v1::Result& r) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opt;
  opt.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(r, &out, opt);
  return out;
}

}  // namespace kj::cli
