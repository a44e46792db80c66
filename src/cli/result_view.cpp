#include "cli/result_view.h"

#include <nlohmann/json.hpp>

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

namespace {

// protobuf's JSON mapping writes 64-bit integers as strings ("elements": "67108864", for
// JavaScript's doubles); a Result's readers (Python, jq, C++) get numbers. Walks the message
// beside its JSON (the same fields, by json_name), so only int64/uint64 fields change.
void int64_as_numbers(const google::protobuf::Message& m, nlohmann::ordered_json& j) {
  using google::protobuf::FieldDescriptor;
  if (!j.is_object()) return;  // well-known types with a string form (Timestamp)
  std::vector<const FieldDescriptor*> fields;
  m.GetReflection()->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const auto it = j.find(f->json_name());
    if (it == j.end() || f->is_map()) continue;
    const auto type = f->cpp_type();
    if (type == FieldDescriptor::CPPTYPE_INT64 || type == FieldDescriptor::CPPTYPE_UINT64) {
      const auto number = [&](nlohmann::ordered_json& v) {
        if (!v.is_string()) return;
        const std::string s = v.get<std::string>();
        v = type == FieldDescriptor::CPPTYPE_INT64 ? nlohmann::ordered_json(std::stoll(s))
                                                   : nlohmann::ordered_json(std::stoull(s));
      };
      if (f->is_repeated())
        for (auto& v : *it) number(v);
      else
        number(*it);
    } else if (type == FieldDescriptor::CPPTYPE_MESSAGE) {
      const auto* refl = m.GetReflection();
      if (!f->is_repeated()) {
        int64_as_numbers(refl->GetMessage(m, f), *it);
        continue;
      }
      for (int i = 0; i < refl->FieldSize(m, f) && i < static_cast<int>(it->size()); ++i)
        int64_as_numbers(refl->GetRepeatedMessage(m, f, i), (*it)[i]);
    }
  }
}

}  // namespace

std::string json_view(const v1::Result& r) {
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(r, &out, {});
  auto j = nlohmann::ordered_json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return out;
  int64_as_numbers(r, j);
  return j.dump(2);
}

namespace {

nlohmann::json kb_stats(const v1::TimingStats& t, const v1::Result& r) {
  if (t.trials() == 0) return nlohmann::json::object();
  return {{"mean", t.mean_ms()},     {"std", t.std_ms()},   {"min", t.min_ms()}, {"max", t.max_ms()},
          {"num_trials", t.trials()}, {"hardware", r.system().device_name()}, {"device", "cuda:0"}};
}

}  // namespace

std::string kernelbench_view(const v1::Result& r) { return kernelbench_record(r).dump(2); }

nlohmann::json kernelbench_eval_results(const std::vector<v1::Result>& results) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& r : results) {
    const auto& meta = r.client_meta();
    const std::string problem = meta.contains("problem_id") ? meta.at("problem_id") : r.job_id();
    auto& samples = out[problem];
    if (samples.is_null()) samples = nlohmann::json::array();
    nlohmann::json sample_id = samples.size();
    if (meta.contains("sample_id")) {
      const std::string& s = meta.at("sample_id");
      const bool numeric = !s.empty() && s.size() < 19 && s.find_first_not_of("0123456789") == std::string::npos;
      sample_id = numeric ? nlohmann::json(std::stoll(s)) : nlohmann::json(s);
    }
    const auto rec = kernelbench_record(r);
    samples.push_back({{"sample_id", sample_id},
                       {"compiled", rec["compiled"]},
                       {"correctness", rec["correctness"]},
                       {"metadata", rec["metadata"]},
                       {"runtime", rec["runtime"]},
                       {"runtime_stats", rec["runtime_stats"]}});
  }
  return out;
}

nlohmann::json kernelbench_record(const v1::Result& r) {
  const bool compiled = r.status() != v1::COMPILE_ERROR && r.status() != v1::INVALID_JOB;
  nlohmann::json meta = {{"hardware", r.system().device_name()},
                         {"kjudge_status", v1::Verdict_Name(r.status())},
                         {"kjudge_message", r.message()}};
  unsigned passed = 0;
  for (const auto& s : r.correctness()) passed += s.passed() ? 1 : 0;
  if (r.correctness_size()) meta["correctness_trials"] = fmt::format("({} / {})", passed, r.correctness_size());
  if (r.status() == v1::COMPILE_ERROR) meta["compilation_error"] = r.message();
  if (r.status() == v1::RUNTIME_ERROR || r.status() == v1::CUDA_FAULT || r.status() == v1::TIMEOUT ||
      r.status() == v1::MEMORY_LIMIT)
    meta["runtime_error"] = r.message();
  if (r.status() == v1::INCORRECT) {
    meta["correctness_issue"] = r.message();
    for (const auto& s : r.correctness())
      for (const auto& o : s.outputs())
        if (!o.passed()) meta["max_difference"].push_back(fmt::format("{:.6f}", o.max_abs_error()));
  }
  const auto& perf = r.performance();
  if (perf.excessive_speedup()) meta["excessive_speedup"] = true;  // KernelBench's own mark beyond 10x
  // KernelBench's numbers: correctness is the allclose trials alone, the runtime is reported
  // whenever the candidate was timed (kjudge's legality verdict stays in metadata).
  const bool all_passed = r.correctness_size() > 0 && passed == static_cast<unsigned>(r.correctness_size());
  const bool timed = all_passed && perf.candidate().trials() > 0;
  nlohmann::json j = {{"compiled", compiled},
                      {"correctness", all_passed},
                      {"metadata", meta},
                      {"runtime", timed ? perf.candidate().mean_ms() : -1.0},
                      {"runtime_stats", timed ? kb_stats(perf.candidate(), r) : nlohmann::json::object()},
                      {"ref_runtime", perf.baseline().trials() ? perf.baseline().mean_ms() : -1.0},
                      {"ref_runtime_stats", kb_stats(perf.baseline(), r)}};
  return j;
}

}  // namespace kj::cli
