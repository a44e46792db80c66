#include "pipeline/kernelbench/checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "pipeline/checks/engine_checks.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/result_flags.h"
#include "pipeline/timing/loop_marks.h"
#include "pipeline/timing/loop_report.h"
#include "pipeline/timing/stats.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {

// KernelBench loops: the slack only has to cover the daemon's reader thread being scheduled late on
// a loaded node (50% and 50 ms).
constexpr ForgedReportSlack kKernelBenchForgedSlack{1.5, 50.0};

Finding tamper(v1::Result& r, v1::CheatClass c, std::string message) {
  return cheat_evidence(FindingKind::Tamper, r, c, std::move(message));
}

Finding integrity_cheat(v1::Result& r, v1::CheatClass c, std::string message) {
  return cheat_evidence(FindingKind::Integrity, r, c, std::move(message));
}

}  // namespace

v1::TensorComparison comparison_from_json(const nlohmann::json& j) {
  v1::TensorComparison c;
  c.set_arg(j.value("arg", "output"));
  c.set_passed(j.value("passed", false));
  c.set_problem(j.value("problem", ""));
  c.set_elements(j.value("elements", std::uint64_t{0}));
  c.set_mismatches(j.value("mismatches", std::uint64_t{0}));
  c.set_first_mismatch_index(j.value("first_mismatch_index", std::int64_t{-1}));
  c.set_max_abs_error(j.value("max_abs_error", 0.0));
  c.set_max_rel_error(j.value("max_rel_error", 0.0));
  c.set_atol(j.value("atol", 0.0));
  c.set_rtol(j.value("rtol", 0.0));
  c.set_nan_outputs(j.value("nan_outputs", std::uint64_t{0}));
  c.set_inf_outputs(j.value("inf_outputs", std::uint64_t{0}));
  if (const auto it = j.find("worst"); it != j.end() && it->is_array())
    for (const auto& w : *it) {
      if (!w.is_object()) continue;
      auto* m = c.add_worst();
      m->set_position(w.value("position", ""));
      m->set_got(w.value("got", ""));
      m->set_expected(w.value("expected", ""));
    }
  return c;
}

// Threads the candidate started and left running: work that goes on after a call can write its
// outputs after they were read, so the outputs it left (wrong, or a reused buffer still holding an
// earlier set's answer) say nothing until this is ruled out.
static std::optional<Finding> check_threads_left(const nlohmann::json& c, v1::Result& r) {
  const int py_threads = c.value("python_threads_started", 0);
  const int before = c.value("threads_before", -1), after = c.value("threads_after", -1);
  const int left = std::max(py_threads, before > 0 && after > 0 ? after - before : 0);
  r.mutable_legality()->set_threads_left(left);
  if (left > 0) {
    add_flag(r, "threads_left_behind");
    return tamper(r, v1::CHEAT_DEFERRED,
                  fmt::format("{} thread(s) started by the candidate were still running after its last call", left));
  }
  // Counted again right after each correctness call: a thread that finished before the run's end
  // was still seen running when its call had returned.
  const auto alive = c.value("threads_alive_after_call", nlohmann::json::array());
  if (!alive.is_array() || alive.empty()) return std::nullopt;
  add_flag(r, "threads_left_behind");
  return tamper(r, v1::CHEAT_DEFERRED,
                fmt::format("thread(s) started by the candidate were still running when forward returned (input set(s) "
                            "{})",
                            alive.dump()));
}

std::optional<Finding> check_before_compare(const KernelBenchFacts& f, v1::Result& r) {
  const auto& c = *f.candidate;
  if (c.contains("guards_changed") && c["guards_changed"].is_array() && !c["guards_changed"].empty()) {
    add_flag(r, "harness_patched");
    return tamper(r, v1::CHEAT_TIMER_PATCH,
                  "the candidate replaced functions the judge relies on: " + c["guards_changed"].dump());
  }
  if (const auto late = c.value("outputs_changed_after_return", nlohmann::json::array());
      late.is_array() && !late.empty()) {
    add_flag(r, "output_written_after_return");
    return tamper(r, v1::CHEAT_DEFERRED,
                  fmt::format("the output for input set(s) {} changed after forward had returned, while none of the "
                              "candidate's code was called: work left running past the call",
                              late.dump()));
  }
  if (auto d = check_threads_left(c, r)) return d;
  for (const auto& flag : f.worker ? f.worker->value("flags", nlohmann::json::array()) : nlohmann::json::array()) {
    const std::string s = flag.get<std::string>();
    if (s.rfind("output_of_earlier_set:", 0) != 0) continue;
    add_flag(r, "output_of_earlier_set");
    const auto sets = s.substr(s.find(':') + 1);
    return tamper(r, v1::CHEAT_MEMOIZATION,
                  fmt::format("the output for input set '{}' is the expected output of set '{}': an answer replayed "
                              "for different inputs",
                              sets.substr(0, sets.find(':')), sets.substr(sets.find(':') + 1)));
  }
  for (const auto& o : c.value("outputs", nlohmann::json::array())) {
    const std::string type = o.value("type", "");
    if (type != "torch.Tensor") {
      add_flag(r, "output_not_plain_tensor");
      return tamper(r, v1::CHEAT_LAZY_OUTPUT, fmt::format("forward returned a {}, not a plain torch.Tensor", type));
    }
  }
  return std::nullopt;
}

std::optional<Finding> check_channel(const nlohmann::json& worker, v1::Result& r) {
  // The harness speaks the channel's protocol exactly (python/kjudge_harness/channel.py); any
  // request the worker refused came from code that reached the socket behind the harness's back.
  const auto refused = worker.value("protocol_errors", nlohmann::json::array());
  if (refused.empty()) return std::nullopt;
  add_flag(r, "channel_protocol_violated");
  return tamper(r, v1::CHEAT_TAMPER,
                fmt::format("the job channel received requests the judge's harness never makes ({} refused; first: {})",
                            refused.size(), refused[0].get<std::string>()));
}

// The source the worker found for a wrong audited call's output ("" if none): the evidence that
// the call replayed an answer computed for other inputs.
static std::string replay_source(const nlohmann::json& worker, int call) {
  const std::string prefix = fmt::format("audit_replayed:{}:", call);
  for (const auto& flag : worker.value("flags", nlohmann::json::array()))
    if (flag.is_string() && flag.get<std::string>().rfind(prefix, 0) == 0) return flag.get<std::string>().substr(prefix.size());
  return "";
}

// A wrong audited call is a replay (CHEAT) only when its output is another call's answer; else
// it is a wrong output (the kernel depends on more than its inputs: a race, stale memory).
static std::optional<Finding> check_audits(const KernelBenchFacts& f, std::size_t calls, v1::Result& r) {
  unsigned audits = 0;
  const auto& audited = (*f.worker)["audits"];
  for (const auto& call_j : f.oracle->value("audits", nlohmann::json::array())) {
    const int call = call_j.get<int>();
    if (call >= static_cast<int>(calls)) continue;
    ++audits;
    const std::string key = std::to_string(call);
    if (audited.contains(key) && audited[key].value("passed", false)) continue;
    add_flag(r, "audit_failed");
    if (const auto source = replay_source(*f.worker, call); !source.empty())
      return integrity_cheat(
          r, v1::CHEAT_MEMOIZATION,
          fmt::format("timed call {} returned the answer for {}, not for its own inputs (the correctness "
                      "calls were right): results reused across calls",
                      call, source));
    return wrong_output_evidence(
        FindingKind::Integrity,
        fmt::format("timed call {} returned wrong outputs for its inputs although the correctness calls were right: "
                    "the result depends on more than the inputs (a race, uninitialised or stale memory, state kept "
                    "between calls)",
                    call));
  }
  r.mutable_performance()->set_audits(audits);
  return std::nullopt;
}

// Marks missing or forged: no trusted figure exists for the loop. Reported time above what the
// daemon's clock saw pass gains nothing, but says the report is forged.
static std::optional<Finding> check_loop_marks(const KernelBenchFacts& f, const std::vector<double>& trial_ms,
                                               v1::Result& r) {
  ClockCheck clock;
  for (double x : trial_ms) clock.inprocess_sum_ms += x;
  const auto loops = timed_loops(*f.marks);
  if (!loops.empty() && loops.front().calls == trial_ms.size() && loops.front().call_ms.size() == trial_ms.size())
    clock.span_ms = loops.front().span_ms;
  // no bound on time outside the calls: the loop waits for the worker's sets and the GPU lock
  clock.forged = kKernelBenchForgedSlack;
  return check_daemon_clock(clock, r);
}

std::optional<Finding> check_after_compare(const KernelBenchFacts& f, v1::Result& r) {
  const auto& c = *f.candidate;
  // 1. Inputs are read-only: the candidate's own check (host sets) and the worker's (its shared
  // device copies against the pristine sets).
  auto mutated = c.value("inputs_mutated", nlohmann::json::array());
  const auto flags = c.value("flags", nlohmann::json::array());
  bool mutated_timing = std::find(flags.begin(), flags.end(), "inputs_mutated_during_timing") != flags.end();
  for (const auto& flag : f.worker->value("flags", nlohmann::json::array())) {
    if (!flag.is_string()) continue;
    const std::string s = flag.get<std::string>();
    if (s.rfind("inputs_mutated:", 0) == 0) mutated.push_back(s.substr(15));
    mutated_timing |= s == "inputs_mutated_during_timing";
    // compat: KernelBench's draws give one output whatever the inputs; judged as KernelBench does, said
    if (s == "reference_constant") add_flag(r, "reference_output_constant_on_kernelbench_inputs");
  }
  if (!mutated.empty() || mutated_timing) {
    r.mutable_legality()->set_inputs_mutated(true);
    add_flag(r, "inputs_mutated");
    return integrity_cheat(r, v1::CHEAT_TAMPER,
                           fmt::format("forward modified its inputs ({}); inputs are read-only",
                                       mutated.empty() ? std::string("timed calls") : mutated.dump()));
  }
  if (!c.value("built_at_run", nlohmann::json::array()).empty()) add_flag(r, "extension_built_at_run_time");
  if (!f.timed || !c.contains("timing")) return std::nullopt;
  const auto& t = c["timing"];
  if (t.value("stop_reason", "") == "compat") return std::nullopt;  // KernelBench's loop: no engine checks
  const auto trial_ms = json_doubles(t, "trial_ms"), wall_ms = json_doubles(t, "trial_wall_ms");

  // 2. Audited timed calls (inputs perturbed per call): full outputs against the oracle's.
  if (auto d = check_audits(f, trial_ms.size(), r)) return d;
  // 3. The daemon's clock over the loop: the marks must be there; what they say about each call's
  // time decides the speedup (pipeline/timing/speedup.h), not a verdict.
  if (auto d = check_loop_marks(f, trial_ms, r)) return d;
  // 4. Device work outside the timed stream: host wall (launch .. device-wide sync) against the
  // events, beyond what the clean process's harness overhead explains.
  if (t.value("method", "") == "cuda_events") {
    const double ev = median(trial_ms), wall = median(wall_ms);
    if (wall > 2.0 * ev + 1.5 * f.clean_wall_minus_event_ms + 0.05) {
      add_flag(r, "work_outside_events");
      return integrity_cheat(
          r, v1::CHEAT_STREAM,
          fmt::format("each call kept the device busy {:.3f} ms but only {:.3f} ms were on the timed stream: "
                      "work on a side stream or deferred past the timer",
                      wall, ev));
    }
  }
  return std::nullopt;
}

}  // namespace kj
