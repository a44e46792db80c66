#include "pipeline/kernelbench/kernelbench_pipeline.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "common/log.h"
#include "pipeline/checks/engine_checks.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/job/group_seeds.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/job/inputs.h"
#include "pipeline/kernelbench/kernelbench_baseline_cache.h"
#include "pipeline/kernelbench/kernelbench_build.h"
#include "pipeline/kernelbench/kernelbench_checks.h"
#include "pipeline/kernelbench/kernelbench_speedup.h"
#include "pipeline/checks/loop_marks.h"
#include "pipeline/kernelbench/kernelbench_roofline.h"
#include "pipeline/job/job_limits.h"
#include "pipeline/kernelbench/kernelbench_legality.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_profiles.h"
#include "common/sha256.h"
#include "pipeline/checks/stats.h"
#include "pipeline/run/workspace.h"
#include "runner/engine_math.h"
#include "worker/device_budget.h"
#include "worker/worker_job.h"
#include "worker/worker_pool.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr unsigned kAudits = 3;
// Candidates together get this share of the device, each as much as the worker estimates for its
// job (its input copies, outputs, timing pool); the rest is the worker's cache, its one large set in
// use at a time, the contexts and torch's allocator slack.
constexpr double kCandidateDeviceShare = 0.3;  // 0.5 ran H100s out of memory with 6.4 GB sets and 16 slots

const char* precision_name(v1::Precision p) {
  switch (p) {
    case v1::FP16: return "fp16";
    case v1::BF16_PRECISION: return "bf16";
    default: return "fp32";
  }
}

// The reference's timings go in every result that got this far, whatever the candidate does next:
// a report lists the reference's time for every problem, not only where a sample was timed.
void record_reference_timings(v1::Performance& perf, const json& baseline) {
  if (baseline.contains("baseline")) *perf.mutable_baseline() = stats_of(baseline["baseline"]);
  if (baseline.contains("compiled_baseline")) *perf.mutable_compiled_baseline() = stats_of(baseline["compiled_baseline"]);
}

// The clean wall-minus-event gap per call (median), from the oracle's baseline loop (a process
// that never ran candidate code): what the side-stream check allows a call beyond its events.
double clean_wall_gap(const json& timing) {
  const std::vector<double> ms = json_doubles(timing, "trial_ms"), wall = json_doubles(timing, "trial_wall_ms");
  if (ms.empty() || ms.size() != wall.size()) return 0;
  std::vector<double> gap;
  for (std::size_t i = 0; i < ms.size(); ++i) gap.push_back(wall[i] - ms[i]);
  std::sort(gap.begin(), gap.end());
  return std::max(0.0, gap[gap.size() / 2]);
}


}  // namespace

namespace {
// The speedup against the reference's loop beside the candidate's when the worker timed one
// (same lock hold, same input buffers), else against the prepared or cached baseline.
void set_kernelbench_speedup(v1::Performance& perf, const json& cand_timing, const json& baseline, const json& seen,
                             const std::vector<ClockMark>& marks, const std::vector<ClockMark>& worker_marks,
                             bool compat, const json& roofline) {
  *perf.mutable_candidate() = stats_of(cand_timing);
  perf.set_stop_reason(cand_timing.value("stop_reason", ""));
  // the loop's own precision, as native jobs report it (it was 0 for every KernelBench job)
  if (const double ci = kjudge::median_rel_ci(cand_timing.value("trial_ms", std::vector<double>{})); std::isfinite(ci))
    perf.set_median_rel_ci(ci);
  set_roofline(perf, roofline);
  const bool adjacent = seen.contains("adjacent_baseline");
  if (!adjacent && !baseline.contains("baseline")) return;
  const auto cand_loops = timed_loops(marks), ref_loops = timed_loops(worker_marks);
  SpeedupFacts f;
  f.candidate = &cand_timing;
  f.baseline = adjacent ? &seen["adjacent_baseline"] : &baseline["baseline"];
  if (baseline.contains("compiled_baseline")) f.compiled_baseline = &baseline["compiled_baseline"];
  if (!cand_loops.empty()) f.candidate_loop = &cand_loops.front();
  if (adjacent && !ref_loops.empty())
    f.harness_overhead_ms = harness_overhead_ms(*f.baseline, ref_loops.back());
  else if (!adjacent && baseline.contains("mark_overhead_ms"))
    f.harness_overhead_ms = baseline.value("mark_overhead_ms", 0.0);
  f.compat = compat;
  set_speedup(perf, f);
  perf.set_baseline_adjacent(adjacent);
  if (adjacent) perf.set_baseline_cached(false);
}
}  // namespace

void judge_kernelbench(const v1::Job& job, const JudgeContext& ctx, v1::Result& r, std::string& detail) {
  const auto& task = job.kernelbench();
  const auto& cfg = ctx.config;
  const JudgeMode mode = judge_mode(job);
  const bool compat = mode == JudgeMode::Compat;
  const std::string backend = kernelbench_backend_name(task.backend());
  const bool gpu = backend != "cpu";
  const JobLimits limits = job_limits(job, cfg);
  const std::uint32_t compile_ms = limits.compile_ms, run_ms = limits.run_ms;
  const std::uint64_t output_bytes = limits.output_bytes;
  const auto& tcfg = job.options().timing();
  const TrialPlan trials = trial_plan(job);
  const unsigned max_trials = trials.max_trials, min_trials = trials.min_trials;
  const unsigned budget_ms = tcfg.budget_ms() ? tcfg.budget_ms() : std::min(run_ms / 4, 3000u);
  const std::string device_profile = gpu ? "nvidia-cuda" : "";

  Workspace ws(cfg.state_dir, job.job_id(), sandbox_host_uid(cfg.sandbox.host_uid),
               sandbox_host_gid(cfg.sandbox.host_gid), cfg.keep_job_dirs);
  const fs::path build_dir = ws.make_party_dir("build"), cand_dir = ws.make_party_dir("candidate");
  StageClock clock(r);
  auto fail = [&](const Decision& d) { record_verdict(r, d); };
  auto conclude = [&](const Findings& found) { record_verdict(r, final_verdict(found, mode)); };
  const CandidateSource src = candidate_source(task);
  ws.write_file(build_dir / src.file_name, src.text);
  ws.write_file(build_dir / "reference.py", task.reference_py());
  json overrides = json::object();
  for (const auto& [k, v] : task.size_overrides()) overrides[k] = v;

  // 1-2. Static policy and build (compile sandbox, no GPU).
  clock.start(v1::STAGE_BUILD);
  const KernelBenchBuild built = build_kernelbench(
      job, cfg, {backend, build_dir, src.completion, overrides, compile_ms, output_bytes, ctx.builds}, r);
  if (built.failure) {
    detail = built.detail;
    return fail(*built.failure);
  }
  const std::string& arch = built.arch;
  const std::vector<kjsandbox::BindMount>& ext_binds = built.binds;
  ws.write_file(cand_dir / "manifest.json", built.manifest.dump());

  // 3. The tenant's trusted worker: the problem's sets made on its device from secret seeds
  // (compat: KernelBench's), the expected outputs kept there, the baseline when not cached. The
  // reference has its own budget: its time never counts against the candidate's limit.
  clock.start(v1::STAGE_ORACLE);
  if (backend != "cpu")
    if (auto d = decide_gpu_still_healthy()) return fail(*d);
  // A one-shot eval judges in turns with the node's other evals (its build ran beside theirs).
  std::optional<GpuLock> turn;
  if (ctx.device_turns) {
    turn.emplace(device_turn_file(cfg, backend));
    (*r.mutable_phase_seconds())["device_turn_wait"] = turn->seconds_waited();
  }
  // A retry (its first try met a fault, most often other jobs' sets filling the device) has the
  // device's memory to itself from the worker's sets to the candidate's end.
  std::optional<DeviceBudget::Hold> device_hold;
  double device_wait = 0;
  if (ctx.delivery > 1 && backend != "cpu") device_hold.emplace(device_budget(gpu_index(cfg)).acquire_alone(&device_wait));
  const GroupSeeds seeds = compat ? GroupSeeds::kernelbench() : group_seeds(job);
  std::vector<unsigned> audits;
  if (!compat && max_trials) audits = pick_audit_calls(std::max(min_trials, 2u), std::min(kAudits, std::max(min_trials, 2u)));
  json timing = {{"warmup", trials.warmup},
                 {"min_trials", min_trials},
                 {"max_trials", max_trials},
                 {"budget_ms", budget_ms},
                 {"target_rel_ci", 0.01},
                 {"l2_flush", true},
                 {"perturb_seed", seeds.perturb},
                 {"audit_calls", audits},
                 {"skip", max_trials == 0}};
  json sets = json::array();
  if (!compat) {
    const unsigned n = job.options().correctness_sets() ? job.options().correctness_sets() : 5;
    static const char* kinds[] = {"none", "none", "signflip", "scale8", "spike"};
    static const char* names[] = {"declared", "declared-2", "signed", "large", "spike"};
    for (unsigned k = 0; k < n; ++k)
      sets.push_back({{"name", k < 5 ? names[k] : fmt::format("declared-{}", k - 2)},
                      {"seed", seeds.set(k)},
                      {"transform", k < 5 ? kinds[k] : "none"}});
  }
  const v1::Precision prec = task.precision();
  Tolerance tol = prec == v1::FP16 || prec == v1::BF16_PRECISION ? Tolerance{1e-2, 1e-2} : Tolerance{1e-4, 1e-4};
  if (compat) tol.scale_aware = false, tol.nan_equal = false;  // torch.allclose exactly
  if (job.options().has_tolerance()) tol = {job.options().tolerance().atol(), job.options().tolerance().rtol()};
  const KernelBenchBaselineCache baselines(private_dir(kernelbench_cache_root(cfg) / "kb-baseline"), task, compat, timing);
  WorkerJob wjob(trusted_worker(cfg, job.tenant(), gpu), job.job_id(), task.reference_py(),
                 sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid));
  json prep_req = {{"backend", backend},        {"precision", precision_name(task.precision())},
                   {"mode", compat ? "compat" : "strict"},
                   {"size_overrides", overrides}, {"weight_seed", seeds.weight},
                   {"sets", sets},              {"timing", timing},
                   {"tolerance", {{"atol", tol.atol}, {"rtol", tol.rtol}, {"scale_aware", tol.scale_aware},
                                  {"nan_equal", tol.nan_equal}}},
                   {"time_baseline", max_trials > 0},
                   {"adjacent_baseline", max_trials > 0 && cfg.kernelbench.adjacent_baseline},
                   // skip the baseline only on the node the cached figures were measured on
                   {"baseline_unless_identity", baselines.cached() ? baselines.expected_identity() : ""}};
  std::optional<json> prepared;
  std::vector<ClockMark> oracle_marks;
  std::string why;
  const auto budget = std::chrono::milliseconds(cfg.kernelbench.reference_wall_ms);
  const auto asked = std::chrono::steady_clock::now();
  {
    ClockReader reader(wjob.clock_socket());
    prepared = wjob.prepare(prep_req, budget, why);
    oracle_marks = reader.finish();
  }
  if (!prepared) {
    detail = why;
    if (std::chrono::steady_clock::now() - asked >= budget) {  // it never returned: it holds the worker, which goes
      wjob.worker().kill();
      return fail(job_fault(fmt::format("the reference did not finish within its own budget of {} ms",
                                        cfg.kernelbench.reference_wall_ms)));
    }
    // The worker went away under it (the tenant's worker serves several jobs, so the cause may
    // be another's): ours to retry, never the candidate's.
    return fail(node_fault("trusted worker: " + why));
  }
  if (!prepared->value("ok", false)) {
    detail = prepared->value("error", "");
    if (detail.find("needs a GPU") != std::string::npos) return fail(gpu_could_not_serve("no GPU visible to the trusted worker"));
    if (prepared->value("fault", "") == "device") return fail(gpu_could_not_serve(last_line(detail)));
    // the node's memory at that moment, not the job's fault: retried, and no canary (a canary on a
    // device full of the judge's own sets failed and quarantined a healthy H100)
    if (prepared->value("fault", "") == "resources")
      return fail(node_fault("the trusted worker ran out of device memory making the sets: " + last_line(detail)));
    return fail(job_fault("the reference failed: " + last_line(detail)));
  }
  json& orep = *prepared;
  add_phases(r, "oracle", orep);
  r.mutable_system()->set_device_name(orep.value("device_name", ""));
  r.mutable_system()->set_framework_version("torch " + orep.value("torch_version", ""));
  // The clean process's figures: measured now (and cached), or the cache's for this very node.
  json baseline;
  if (orep.contains("baseline")) {
    baseline = {{"baseline", orep["baseline"]}, {"wall_gap_ms", clean_wall_gap(orep["baseline"])}};
    if (orep.contains("compiled_baseline")) baseline["compiled_baseline"] = orep["compiled_baseline"];
    if (const auto loops = timed_loops(oracle_marks); !loops.empty())
      if (const auto o = harness_overhead_ms(orep["baseline"], loops.front())) baseline["mark_overhead_ms"] = *o;
    baselines.store(orep.value("node_identity", ""), baseline);
  } else if (orep.value("baseline_skipped", false) && baselines.cached()) {
    baseline = *baselines.cached();
    r.mutable_performance()->set_baseline_cached(true);
  }
  record_reference_timings(*r.mutable_performance(), baseline);

  // 4. Candidate: its builds, its own code, and the job channel to the worker (input sets in,
  // outputs out, as shared device memory); nothing the worker keeps.
  clock.start(v1::STAGE_CANDIDATE);
  timing["audit_calls"] = orep.value("audits", json::array());  // the worker may keep fewer (device memory)
  json oracle_public = {{"init_inputs", orep["init_inputs"]}, {"pool", orep.value("pool", json::array())},
                        {"sets", orep["sets"]}};
  HarnessRun c;
  c.role = "candidate";
  c.slot = SlotKind::Run;
  c.job_dir = cand_dir;
  c.wall_ms = run_ms;
  c.output_bytes = output_bytes;
  c.device_profile = device_profile;
  c.file_size_bytes = 1ull << 30;
  c.binds = ext_binds;
  c.binds.push_back({(build_dir / "candidate.py").string(), "/candidate.py", false});
  c.binds.push_back({wjob.channel_dir().string(), "/chan", true});
  c.request = {{"backend", backend},
               {"precision", precision_name(task.precision())},
               {"mode", compat ? "compat" : "strict"},
               {"candidate_path", "/candidate.py"},
               {"manifest_path", "/job/manifest.json"},
               {"fallback_ext_dir", "/tmp/ext-run"},
               {"arch_list", arch},
               {"weight_seed", seeds.weight},
               {"oracle", oracle_public},
               {"channel_path", WorkerJob::kChannelInCandidate},
               {"timing", timing},
               {"clock_path", "/job/clock"}};
  // The legality trace's kernel recorder (CUPTI callbacks): read-only at a fixed path; without it
  // the harness starts torch.profiler instead.
  if (backend != "cpu" && fs::is_regular_file(cfg.kernelbench.kernel_trace_lib)) {
    c.binds.push_back({cfg.kernelbench.kernel_trace_lib.string(), kKernelTraceInSandbox, false});
    c.request["kernel_trace_lib"] = kKernelTraceInSandbox;
  }
  // Device memory: the candidate's copies of a set, its output and its timing pool, admitted
  // beside the other running candidates (waiting here is the node's time, not the candidate's).
  if (!device_hold)
    device_hold.emplace(device_budget(gpu_index(cfg)).acquire(
        orep.value("candidate_device_bytes", std::uint64_t{0}),
        static_cast<std::uint64_t>(kCandidateDeviceShare * orep.value("device_total_bytes", 0.0)), &device_wait));
  (*r.mutable_phase_seconds())["device_memory_wait"] = device_wait;
  std::vector<ClockMark> marks, worker_marks;
  HarnessStep cand;
  {
    // The daemon's clock: the sockets the candidate's harness and the worker (the reference's
    // loop beside the candidate's) send their loop marks to.
    ClockReader reader(cand_dir / "clock");
    ClockReader worker_clock(wjob.clock_socket());
    cand = run_harness(cfg, c);
    marks = reader.finish();
    worker_marks = worker_clock.finish();
  }
  if (cand.report) add_phases(r, "candidate", *cand.report);
  r.mutable_resources()->set_cpu_seconds(cand.sandbox.cpu_seconds);
  r.mutable_resources()->set_wall_seconds(cand.sandbox.wall_seconds);
  r.mutable_resources()->set_peak_host_memory_bytes(cand.sandbox.peak_rss_bytes);
  const auto seen = wjob.results(std::chrono::seconds(60), why);
  if (!seen || !seen->value("ok", false)) {
    detail = seen ? seen->value("error", "") : why;
    return fail(node_fault("trusted worker: " + (seen ? last_line(detail) : why)));
  }
  if (const auto faults = seen->value("worker_faults", json::array()); !faults.empty()) {
    detail = faults.dump();  // the worker's own fault: ours, whatever the candidate then did
    const std::string first = "trusted worker: " + faults[0].get<std::string>();
    if (first.find("out of memory") != std::string::npos) return fail(node_fault(first));  // memory, not the GPU's health
    return fail(gpu_could_not_serve(first));
  }
  if (auto f = check_channel(*seen, r)) return conclude({*f});
  (*r.mutable_phase_seconds())["gpu_lock_wait"] = seen->value("lock_wait_seconds", 0.0);
  (*r.mutable_phase_seconds())["judge_wait"] = seen->value("judge_seconds", 0.0);
  // Waiting for the judge (its sets and comparisons, other jobs' timed loops on the GPU lock) is the
  // node's time: a limit that ran out while a quarter of it went to that wait is ours (retried),
  // never the candidate's TIMEOUT.
  if (const double waited = seen->value("judge_seconds", 0.0);
      cand.sandbox.outcome == kjsandbox::Outcome::WallTimeout && waited * 1000.0 > 0.25 * run_ms)
    return fail(node_fault(fmt::format("the candidate's time limit ran out while it waited {:.0f} s for the judge "
                                       "(its sets, other jobs' timed loops on a busy node): judged again",
                                       waited)));
  // Device memory: a candidate that ran out of it while it held and asked for no more than it was
  // admitted with found the device filled by other jobs: ours (retried), not its RUNTIME_ERROR.
  // (A retry had the device alone, admitted with 0 bytes: its shortage is its own.)
  if (cand.report && cand.report->contains("device_bytes_needed") &&
      cand.report->value("device_bytes_needed", std::uint64_t{0}) <= device_hold->bytes())
    return fail(node_fault(fmt::format("the device had no room for the {:.1f} GiB the candidate was admitted with "
                                       "(other jobs' memory on a busy node): judged again",
                                       device_hold->bytes() / double(1ull << 30))));
  (*r.mutable_phase_seconds())["gpu_lock_held"] = seen->value("lock_seconds", 0.0);
  if (auto d = decide_harness(cand.sandbox, cand.report ? &*cand.report : nullptr, Party::Candidate, false, run_ms,
                                cand.host_fault, has_device_ready_mark(marks))) {
    // the harness's repair text: the exception and the candidate's own frames, not the traceback
    // through the judge's files (that stays in the report for the operator)
    detail = cand.report ? cand.report->value("feedback", "") : tail(cand.sandbox.stderr_data, 2000);
    if (cand.report && cand.report->contains("error"))
      log::info("kernelbench.candidate_error", {{"job_id", job.job_id()}, {"error", tail(cand.report->value("error", std::string()), 4000)}});
    return fail(*d);
  }
  const json& crep = *cand.report;

  // 5. The worker's comparisons, made on its device with the job's tolerance.
  clock.start(v1::STAGE_COMPARE);
  KernelBenchFacts facts;
  facts.candidate = &crep;
  facts.oracle = &orep;
  facts.worker = &*seen;
  facts.marks = &marks;
  facts.tol = tol;
  facts.timed = max_trials > 0;
  if (auto f = check_before_compare(facts, r)) return conclude({*f});
  const json& compared = (*seen)["sets"];
  for (const auto& s : orep["sets"]) {
    if (s.contains("skipped") || s.value("timing_only", false)) continue;
    const std::string k = std::to_string(s["index"].get<int>());
    v1::CorrectnessSet cs;
    cs.set_name(s["name"].get<std::string>());
    cs.set_variant(s.value("variant", ""));
    v1::TensorComparison cmp = compared.contains(k) ? comparison_from_json(compared[k]) : v1::TensorComparison();
    if (!compared.contains(k)) {
      cmp.set_arg("output");
      cmp.set_problem("no output for this set");
    }
    cs.set_passed(cmp.passed());
    *cs.add_outputs() = cmp;
    *r.add_correctness() = cs;
  }
  if (auto wrong = correctness_finding(r.correctness())) return conclude({*wrong});

  // 6. Integrity (inputs, threads, audited calls, the daemon's clock) before legality: a memoizing
  // candidate that skips its kernel on a cached call is a memoization cheat first.
  clock.start(v1::STAGE_TIMING);
  if (max_trials && baseline.contains("baseline")) {
    facts.clean_wall_minus_event_ms = baseline.value("wall_gap_ms", 0.0);
  }
  Findings found;
  if (auto f = check_after_compare(facts, r)) found.push_back(*f);
  if (findings_end_the_job(found, mode)) return conclude(found);
  // 7. Legality (the traced pass).
  clock.start(v1::STAGE_LEGALITY);
  LegalityTrace trace;
  if (crep.contains("trace")) {
    const auto& t = crep["trace"];
    trace.ops = t.value("ops", std::vector<std::string>{});
    trace.kernels = t.value("kernels", std::vector<std::string>{});
    trace.ext_calls = t.value("ext_calls", 0);
    trace.tracer_ok = t.value("tracer_ok", false);
    trace.tracer_problem = t.value("tracer_problem", "");
    trace.profiled_kernels = t.value("profiled_kernels", false);
  } else {
    trace.tracer_problem = "the candidate's process reported no trace";
  }
  const LegalityClass cls = classify_legality(trace);
  auto* leg = r.mutable_legality();
  leg->set_custom_kernels(trace.profiled_kernels ? cls.custom_kernels : static_cast<unsigned>(trace.ext_calls));
  leg->set_library_kernels(cls.library_kernels);
  for (const auto& op : cls.forbidden_ops) leg->add_forbidden_ops(op);
  // Compat mode still times an illegal candidate, so KernelBench's own numbers can be reported
  // beside kjudge's verdict; strict mode stops here.
  if (auto f = decide_legality(trace, cls, /*libraries_allowed=*/false)) found.push_back(*f);
  if (findings_end_the_job(found, mode)) return conclude(found);

  if (max_trials && crep.contains("timing"))
    set_kernelbench_speedup(*r.mutable_performance(), crep["timing"], baseline, *seen, marks, worker_marks, compat,
                            orep.value("roofline", json()));
  if (r.performance().speedup_source() == "trusted_clock") add_flag(r, "outside_clock_disagrees");
  conclude(found);
  if (found.empty()) clock.start(v1::STAGE_DONE);
}

}  // namespace kj
