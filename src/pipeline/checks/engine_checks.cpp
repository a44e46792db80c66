#include "pipeline/checks/engine_checks.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "pipeline/job/dtype.h"
#include "common/random.h"
#include "pipeline/timing/stats.h"
#include "runner/clock_marks.h"
#include "runner/engine_math.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {

// Native loops: the runner stamps its own loop, so only the daemon's reader thread's latency needs
// forgiving (5% and 1 ms).
constexpr ForgedReportSlack kNativeForgedSlack{1.05, 1.0};

Finding cheat(v1::Result& r, v1::CheatClass c, std::string message) {
  return cheat_evidence(FindingKind::Integrity, r, c, std::move(message));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t digest_str(const std::string& s, std::uint64_t h = 0xcbf29ce484222325ull) {
  return kjudge::digest64(std::as_bytes(std::span(s.data(), s.size())), h);
}

bool is_output(const v1::Argument& a) { return a.has_tensor() && a.tensor().role() != v1::IN; }

}  // namespace

InputDigests digest_input_sets(const v1::NativeTask& task, const std::vector<InputSet>& sets) {
  InputDigests out;
  for (unsigned k = 0; k < sets.size(); ++k)
    for (int i = 0; i < task.args_size(); ++i)
      if (task.args(i).has_tensor() && task.args(i).tensor().role() == v1::IN)
        out[k][i] = digest_str(slurp(sets[k].dir / fmt::format("arg{}.bin", i)));
  return out;
}

v1::CorrectnessSet compare_set(const v1::NativeTask& task, const std::string& name, const fs::path& expected_dir,
                               const fs::path& actual_dir, const Tolerance* override_tol) {
  v1::CorrectnessSet cs;
  cs.set_name(name);
  bool ok = true;
  for (int i = 0; i < task.args_size(); ++i) {
    const auto& a = task.args(i);
    if (!is_output(a)) continue;
    const auto file = fmt::format("arg{}.bin", i);
    const std::string expected = slurp(expected_dir / file), actual = slurp(actual_dir / file);
    const Tolerance tol = override_tol ? *override_tol : default_tolerance(a.tensor().dtype());
    auto cmp = compare_tensor(a.tensor().dtype(), std::as_bytes(std::span(expected)), std::as_bytes(std::span(actual)), tol);
    cmp.set_arg(a.name());
    ok = ok && cmp.passed();
    *cs.add_outputs() = std::move(cmp);
  }
  cs.set_passed(ok);
  return cs;
}

std::uint64_t outputs_digest_of_dir(const v1::NativeTask& task, const fs::path& dir) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < task.args_size(); ++i)
    if (is_output(task.args(i))) h = digest_str(slurp(dir / fmt::format("arg{}.bin", i)), h);
  return h;
}

std::vector<unsigned> pick_audit_calls(unsigned below, unsigned count) {
  std::set<unsigned> picked;
  count = std::min(count, below);
  while (picked.size() < count) picked.insert(static_cast<unsigned>(random_u64() % below));
  return {picked.begin(), picked.end()};
}


namespace {
// The timed loop on the daemon's clock: its span S..E in ms, and its wait for a CPU the host gave
// to others (0 unless both marks were sampled).
struct LoopOnDaemonClock {
  double span_ms = 0;
  double cpu_wait_ms = 0;
};
// 'S', one 'T' per timed call, 'E' — exactly, or nullopt.
// Exactly [D] S T... E: the device-ready mark, then one loop with a T per timed call.
std::optional<LoopOnDaemonClock> loop_on_daemon_clock(const v1::RunnerReport& report, const std::vector<ClockMark>& all) {
  const std::size_t n = static_cast<std::size_t>(report.trial_ms_size());
  const std::size_t skip = !all.empty() && all.front().event == kjudge::runner::kDeviceReadyMark ? 1 : 0;
  const std::vector<ClockMark> marks(all.begin() + static_cast<std::ptrdiff_t>(skip), all.end());
  if (marks.size() != n + 2 || marks.front().event != 'S' || marks.back().event != 'E') return std::nullopt;
  for (std::size_t i = 1; i + 1 < marks.size(); ++i)
    if (marks[i].event != 'T') return std::nullopt;
  LoopOnDaemonClock loop;
  loop.span_ms = std::chrono::duration<double, std::milli>(marks.back().at - marks.front().at).count();
  if (marks.front().cpu && marks.back().cpu)
    loop.cpu_wait_ms = std::min(loop.span_ms, host_cpu_wait_ms(*marks.front().cpu, *marks.back().cpu));
  return loop;
}
double sum(const google::protobuf::RepeatedField<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
}  // namespace

std::optional<Finding> check_daemon_clock(const ClockCheck& c, v1::Result& r) {
  auto* perf = r.mutable_performance();
  perf->set_inprocess_sum_ms(c.inprocess_sum_ms);
  if (!c.span_ms) {
    add_flag(r, "clock_marks_inconsistent");
    return suspicious_evidence("the timed loop's marks on the daemon's clock are missing or forged");
  }
  perf->set_outside_wall_ms(*c.span_ms);
  perf->set_loop_cpu_wait_ms(c.cpu_wait_ms);
  if (c.outside_bound_ms) {
    const double bound = *c.outside_bound_ms + c.cpu_wait_ms;
    perf->set_outside_bound_ms(bound);
    if (*c.span_ms > bound) {
      add_flag(r, "outside_clock_disagrees");
      return suspicious_evidence(
          fmt::format("the daemon's clock saw {:.2f} ms for the timed loop, the kernel's "
                      "process reported {:.2f} ms of calls (+ harness overhead, + {:.2f} ms it waited "
                      "for a CPU the host gave to others; {:.2f} ms allowed): time is being spent "
                      "outside the measured region",
                      *c.span_ms, c.inprocess_sum_ms, c.cpu_wait_ms, bound));
    }
  }
  if (c.inprocess_sum_ms > *c.span_ms * c.forged.factor + c.forged.slack_ms) {
    add_flag(r, "inprocess_exceeds_outside");
    return suspicious_evidence("the reported call times exceed the daemon's own clock (forged report?)");
  }
  return std::nullopt;
}

double harness_overhead_per_call(const v1::RunnerReport& report, const std::vector<ClockMark>& marks) {
  const auto loop = loop_on_daemon_clock(report, marks);
  if (!loop || report.trial_ms_size() == 0) return 0;
  // the reference's wait for a CPU stays in: its estimate can be too large (a late sample), and
  // an overhead too small would make the bound harsh on an honest candidate
  return std::max(0.0, (loop->span_ms - sum(report.trial_ms())) / report.trial_ms_size());
}

std::uint64_t bytes_moved(const v1::NativeTask& task) {
  if (task.min_bytes_moved()) return task.min_bytes_moved();
  std::uint64_t b = 0;
  for (const auto& a : task.args()) {
    if (!a.has_tensor()) continue;
    const std::uint64_t t = tensor_elements(a.tensor()) * dtype_size(a.tensor().dtype());
    b += a.tensor().role() == v1::INOUT ? 2 * t : t;
  }
  return b;
}

namespace {

// 1. Inputs: what the kernel left in IN tensors must be what the daemon wrote.
std::optional<Finding> check_inputs(const EngineFacts& f, v1::Result& r) {
  const auto& rep = *f.report;
  const auto& task = *f.task;
  auto modified = [&](const google::protobuf::RepeatedPtrField<v1::ArgDigest>& got, const char* when)
      -> std::optional<std::string> {
    for (const auto& d : got) {
      const auto set = f.expected_inputs->find(d.set());
      if (set == f.expected_inputs->end()) continue;
      const auto arg = set->second.find(d.arg());
      if (arg != set->second.end() && arg->second != d.hash())
        return fmt::format("input '{}' was modified by the kernel ({})", task.args(d.arg()).name(), when);
    }
    return std::nullopt;
  };
  std::size_t expected_digests = 0;
  for (const auto& [set, args] : *f.expected_inputs)
    if (set < f.sets->size()) expected_digests += args.size();
  if (auto bad = modified(rep.inputs_after_correctness(), "correctness call")) {
    r.mutable_legality()->set_inputs_mutated(true);
    add_flag(r, "inputs_mutated");
    return cheat(r, v1::CHEAT_TAMPER, *bad + "; IN tensors are read-only (declare the argument INOUT to write it)");
  }
  if (static_cast<std::size_t>(rep.inputs_after_correctness_size()) != expected_digests) {
    add_flag(r, "input_digests_missing");
    return suspicious_evidence("the harness did not report every input digest (report forged?)");
  }
  for (const auto& fl : rep.flags())
    if (fl.rfind("inputs_mutated_during_timing:", 0) == 0) {
      r.mutable_legality()->set_inputs_mutated(true);
      add_flag(r, "inputs_mutated");
      const int arg = std::atoi(fl.c_str() + fl.find(':') + 1);
      const std::string name = arg >= 0 && arg < task.args_size() ? task.args(arg).name() : "?";
      return cheat(r, v1::CHEAT_TAMPER, fmt::format("input '{}' was modified by the kernel (timed calls); IN tensors "
                                                    "are read-only (declare the argument INOUT to write it)",
                                                    name));
    }
  return std::nullopt;
}

// 2. Threads the candidate left running after its last call.
std::optional<Finding> check_threads(const v1::RunnerReport& rep, v1::Result& r) {
  const int left = rep.threads_before() > 0 && rep.threads_after() > 0 ? rep.threads_after() - rep.threads_before() : 0;
  r.mutable_legality()->set_threads_left(std::max(left, 0));
  if (left > 0) {
    add_flag(r, "threads_left_behind");
    return cheat(r, v1::CHEAT_INTERFERENCE,
                 fmt::format("{} thread(s) started by the kernel were still running after its last call", left));
  }
  return std::nullopt;
}

// 3. The timed loop's bookkeeping must be what was asked: rotation through the pool (`pool`: the
// sets the loop rotates through), one digest per call.
std::optional<Finding> check_bookkeeping(const v1::RunnerReport& rep, const std::vector<unsigned>& pool,
                                         v1::Result& r) {
  const int n = rep.trial_ms_size();
  if (n == 0 || rep.trial_set_size() != n || rep.trial_output_hash_size() != n || rep.trial_wall_ms_size() != n) {
    add_flag(r, "timing_report_inconsistent");
    return suspicious_evidence("the harness's timing report is inconsistent (forged?)");
  }
  for (int i = 0; i < n; ++i)
    if (rep.trial_set(i) != pool[static_cast<std::size_t>(i) % pool.size()]) {
      add_flag(r, "timing_report_inconsistent");
      return suspicious_evidence("the timed calls did not rotate through the input pool as asked");
    }
  return std::nullopt;
}

// 4. Audited calls (every timed call's inputs are perturbed, so each is new): full outputs
// re-checked against the reference's outputs for the same call.
std::optional<Finding> check_audits(const EngineFacts& f, const std::vector<unsigned>& pool, v1::Result& r) {
  const auto& rep = *f.report;
  const auto& task = *f.task;
  const int n = rep.trial_ms_size();
  std::map<unsigned, std::uint64_t> correctness_digest;  // the candidate's answers on unperturbed sets
  for (unsigned k : pool) correctness_digest[k] = outputs_digest_of_dir(task, f.cand_dir / fmt::format("out{}", k));
  unsigned audits = 0;
  for (unsigned call : f.audit_calls) {
    if (static_cast<int>(call) >= n) continue;
    const fs::path dir = f.cand_dir / "audit" / std::to_string(call);
    ++audits;
    const auto cs = compare_set(task, "audit", f.ref_dir / "audit" / std::to_string(call), dir, f.override_tol);
    const std::uint64_t got = outputs_digest_of_dir(task, dir);
    if (got != rep.trial_output_hash(static_cast<int>(call))) {
      add_flag(r, "audit_digest_mismatch");
      return cheat(r, v1::CHEAT_FORGERY, fmt::format("timed call {}: the reported output digest does not match "
                                                     "the outputs written for it",
                                                     call));
    }
    if (!cs.passed()) {
      add_flag(r, "audit_failed");
      for (const auto& [k, d] : correctness_digest)
        if (got == d)
          return cheat(r, v1::CHEAT_MEMOIZATION,
                       fmt::format("timed call {} returned the outputs of earlier, different inputs", call));
      return cheat(r, v1::CHEAT_FORGERY,
                   fmt::format("timed call {} returned wrong outputs (the correctness calls were right)", call));
    }
  }
  r.mutable_performance()->set_audits(audits);
  return std::nullopt;
}

// 8. Roofline: faster than moving the bytes at the clean process's measured bandwidth is impossible.
std::optional<Finding> check_roofline(const EngineFacts& f, double med_ev, v1::Result& r) {
  const double bw = f.baseline->peak_gbps();
  if (bw <= 0) return std::nullopt;
  auto* perf = r.mutable_performance();
  const double floor_ms = static_cast<double>(bytes_moved(*f.task)) / (bw * 1.5 * 1e6);
  perf->set_roofline_floor_ms(floor_ms);
  perf->set_peak_gbps(bw);
  if (med_ev > 0) perf->set_achieved_gbps(static_cast<double>(bytes_moved(*f.task)) / (med_ev * 1e6));
  if (med_ev < floor_ms) {
    add_flag(r, "below_roofline");
    return suspicious_evidence(
        fmt::format("median {:.4f} ms is below the physical floor {:.4f} ms (bytes moved "
                    "/ 1.5x measured bandwidth)",
                    med_ev, floor_ms));
  }
  return std::nullopt;
}

}  // namespace

// 7. (engine_checks.h)
std::optional<Finding> check_side_streams(const v1::RunnerReport& rep, double med_ev, double med_wall,
                                         double loop_cpu_wait_ms, v1::Result& r) {
  // a host that kept the process from a CPU stretched the calls' walls, not the device's work: a
  // wait spread over just over half the calls moves their median by up to twice its mean per call
  const double host_wait = rep.trial_ms_size() ? 2.0 * loop_cpu_wait_ms / rep.trial_ms_size() : 0.0;
  if (rep.timing_method() == "cuda_events" && med_wall > 2.0 * med_ev + 0.05 + host_wait) {
    add_flag(r, "work_outside_events");
    return cheat(r, v1::CHEAT_STREAM,
                 fmt::format("each call kept the device busy {:.3f} ms but only {:.3f} ms were on the timed "
                             "stream: work on a private stream or deferred past the timer",
                             med_wall, med_ev));
  }
  return std::nullopt;
}

std::optional<Finding> check_integrity(const EngineFacts& f, v1::Result& r) {
  const auto& rep = *f.report;
  if (auto found = check_inputs(f, r)) return found;
  if (auto found = check_threads(rep, r)) return found;
  for (const auto& fl : rep.flags()) add_flag(r, fl);
  if (!f.timed) return std::nullopt;

  std::vector<unsigned> pool;  // the sets the timed loop rotates through
  for (unsigned k = 0; k < f.sets->size(); ++k)
    if (k == 0 || f.sets->at(k).name.rfind("timing-", 0) == 0) pool.push_back(k);
  if (auto found = check_bookkeeping(rep, pool, r)) return found;
  if (auto found = check_audits(f, pool, r)) return found;

  // 6. The daemon's clock over the loop against the in-process figures and the clean overhead.
  const int n = rep.trial_ms_size();
  const double in_sum = sum(rep.trial_ms());
  const auto loop = loop_on_daemon_clock(rep, *f.marks);
  ClockCheck clock{loop ? std::optional(loop->span_ms) : std::nullopt, in_sum, std::nullopt, kNativeForgedSlack,
                   loop ? loop->cpu_wait_ms : 0};
  clock.outside_bound_ms = (in_sum + n * f.baseline->outside_wall_ms()) * 1.5 + 5.0 + 0.05 * n;
  if (auto d = check_daemon_clock(clock, r)) return d;
  r.mutable_performance();  // the Result has its performance message from here on (as before the split)

  std::vector<double> ev(rep.trial_ms().begin(), rep.trial_ms().end()),
      wall(rep.trial_wall_ms().begin(), rep.trial_wall_ms().end());
  const double med_ev = median(ev), med_wall = median(wall);
  if (auto found = check_side_streams(rep, med_ev, med_wall, clock.cpu_wait_ms, r)) return found;
  return check_roofline(f, med_ev, r);
}

}  // namespace kj
