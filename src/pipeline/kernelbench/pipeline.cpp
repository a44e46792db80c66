#include "pipeline/kernelbench/pipeline.h"

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
#include <variant>

#include "common/log.h"
#include "pipeline/checks/engine_checks.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/run/device_shortage.h"
#include "pipeline/job/group_seeds.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/job/inputs.h"
#include "pipeline/kernelbench/baseline_cache.h"
#include "pipeline/kernelbench/build.h"
#include "pipeline/kernelbench/checks.h"
#include "pipeline/kernelbench/timeout_stage.h"
#include "pipeline/kernelbench/roofline.h"
#include "pipeline/job/limits.h"
#include "pipeline/kernelbench/legality.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_profiles.h"
#include "common/sha256.h"
#include "pipeline/run/workspace.h"
#include "pipeline/timing/speedup.h"
#include "pipeline/timing/stats.h"
#include "pipeline/worker/device_budget.h"
#include "pipeline/worker/worker_lender.h"
#include "pipeline/worker/job.h"
#include "pipeline/worker/pool.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr unsigned kKernelBenchAudits = 3;
// The candidate's wall limit and the reference's budget are their own time: the candidate's waits
// for the judge, the reference's for other jobs' work in the worker, are given back, up to this
// many limits more (a judge that stalls for good still ends the run).
constexpr std::uint32_t kJudgeWaitGrantLimits = 2;

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

// The job resolved once (backend, mode, limits, trial plan, tolerance, party dirs), and what the
// stages hand on: the build, the device held, the worker's job and its reports, the candidate's run.
struct KernelBenchRun {
  const v1::Job& job;
  const v1::KernelBenchTask& task;
  const JudgeContext& ctx;
  const Config& cfg;
  JudgeMode mode;
  bool compat;
  std::string backend;
  bool gpu;
  JobLimits limits;
  TrialPlan trials;
  unsigned budget_ms;  // the candidate's timed loop
  std::string device_profile;
  Tolerance tol;
  Workspace ws;
  fs::path build_dir, cand_dir;
  StageClock clock;
  json overrides = json::object();

  KernelBenchBuild built;
  std::optional<GpuLock> turn;                       // a one-shot eval's turn on the device
  std::optional<DeviceBudget::Hold> device_hold;     // the candidate's (or a retry's) device memory
  double device_wait = 0;
  GroupSeeds seeds;
  json timing;                                       // the timed loop's rules, for worker and candidate
  std::optional<WorkerJob> wjob;                     // destroyed first: the job leaves the worker
  json orep;                                         // the worker's prepare report (the oracle)
  json baseline;                                     // the clean process's figures
  std::vector<ClockMark> marks, worker_marks;        // the daemon's clock on the candidate's and the worker's loops
  HarnessStep cand;
  std::optional<json> seen;                          // the worker's results: comparisons, adjacent baseline
  KernelBenchFacts facts;
  Findings found;

  KernelBenchRun(const v1::Job& j, const JudgeContext& c, v1::Result& r)
      : job(j), task(j.kernelbench()), ctx(c), cfg(c.config), mode(judge_mode(j)), compat(mode == JudgeMode::Compat),
        backend(kernelbench_backend_name(task.backend())), gpu(backend != "cpu"), limits(job_limits(j, cfg)),
        trials(trial_plan(j)), budget_ms(loop_budget_ms(j, limits)), device_profile(gpu ? "nvidia-cuda" : ""),
        tol(tolerance_of(j, compat)),
        ws(cfg.state_dir, j.job_id(), sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid),
           cfg.keep_job_dirs),
        build_dir(ws.make_party_dir("build")), cand_dir(ws.make_party_dir("candidate")), clock(r) {
    for (const auto& [k, v] : task.size_overrides()) overrides[k] = v;
  }

  bool timed() const { return trials.max_trials > 0; }
  static unsigned loop_budget_ms(const v1::Job& j, const JobLimits& limits) {
    const auto& tcfg = j.options().timing();
    return tcfg.budget_ms() ? tcfg.budget_ms() : std::min(limits.run_ms / 4, 3000u);
  }
  static Tolerance tolerance_of(const v1::Job& j, bool compat) {
    const v1::Precision prec = j.kernelbench().precision();
    Tolerance tol = prec == v1::FP16 || prec == v1::BF16_PRECISION ? Tolerance{1e-2, 1e-2} : Tolerance{1e-4, 1e-4};
    if (compat) tol.scale_aware = false, tol.nan_equal = false;  // torch.allclose exactly
    if (j.options().has_tolerance()) tol = {j.options().tolerance().atol(), j.options().tolerance().rtol()};
    return tol;
  }
};

// How a stage ended the job: a failure (recorded as it is) or findings (final_verdict weighs
// them); monostate: the job goes on.
using StageEnd = std::variant<std::monostate, Decision, Findings>;

// 1-2. Static policy and build (compile sandbox, no GPU).
StageEnd build(KernelBenchRun& k, v1::Result& r, std::string& detail) {
  const CandidateSource src = candidate_source(k.task);
  k.ws.write_file(k.build_dir / src.file_name, src.text);
  k.ws.write_file(k.build_dir / "reference.py", k.task.reference_py());
  k.clock.start(v1::STAGE_BUILD);
  k.built = build_kernelbench(k.job, k.cfg,
                              {k.backend, k.build_dir, src.completion, k.overrides, k.limits.compile_ms,
                               k.limits.output_bytes, k.ctx.builds},
                              r);
  if (k.built.failure) {
    detail = k.built.detail;
    return *k.built.failure;
  }
  k.ws.write_file(k.cand_dir / "manifest.json", k.built.manifest.dump());
  return {};
}

// 3a. The device before the job's first GPU work: still healthy, a one-shot eval's turn, and a
// retry's device memory to itself.
StageEnd take_device(KernelBenchRun& k, v1::Result& r) {
  if (k.backend != "cpu")
    if (auto d = decide_gpu_still_healthy()) return *d;
  // A one-shot eval judges in turns with the node's other evals (its build ran beside theirs).
  if (k.ctx.device_turns) {
    k.turn.emplace(device_turn_file(k.cfg, k.backend));
    (*r.mutable_phase_seconds())["device_turn_wait"] = k.turn->seconds_waited();
  }
  // A retry (its first try met a fault, most often other jobs' sets filling the device) has the
  // device's memory to itself from the worker's sets to the candidate's end.
  if (k.ctx.delivery > 1 && k.backend != "cpu")
    k.device_hold.emplace(device_budget(gpu_index(k.cfg)).acquire_alone(&k.device_wait));
  return {};
}

// The timed loop's rules (secret audit positions and perturbation seed in strict mode) and the
// correctness sets the worker makes, each from its own secret seed (compat: KernelBench's).
void plan_sets_and_timing(KernelBenchRun& k, json& sets) {
  k.seeds = k.compat ? GroupSeeds::kernelbench() : group_seeds(k.job);
  const unsigned min_trials = k.trials.min_trials, max_trials = k.trials.max_trials;
  std::vector<unsigned> audits;
  if (!k.compat && max_trials) audits = pick_audit_calls(std::max(min_trials, 2u), std::min(kKernelBenchAudits, std::max(min_trials, 2u)));
  k.timing = {{"warmup", k.trials.warmup},
              {"min_trials", min_trials},
              {"max_trials", max_trials},
              {"budget_ms", k.budget_ms},
              {"target_rel_ci", 0.01},
              {"l2_flush", true},
              {"perturb_seed", k.seeds.perturb},
              {"audit_calls", audits},
              {"skip", max_trials == 0}};
  sets = json::array();
  if (k.compat) return;
  const unsigned n = k.job.options().correctness_sets() ? k.job.options().correctness_sets() : 5;
  static const char* kinds[] = {"none", "none", "signflip", "scale8", "spike"};
  static const char* names[] = {"declared", "declared-2", "signed", "large", "spike"};
  for (unsigned i = 0; i < n; ++i)
    sets.push_back({{"name", i < 5 ? names[i] : fmt::format("declared-{}", i - 2)},
                    {"seed", k.seeds.set(i)},
                    {"transform", i < 5 ? kinds[i] : "none"}});
}

json prepare_request(const KernelBenchRun& k, const json& sets, const KernelBenchBaselineCache& baselines) {
  const Tolerance& tol = k.tol;
  return {{"backend", k.backend},        {"precision", precision_name(k.task.precision())},
          {"mode", k.compat ? "compat" : "strict"},
          {"size_overrides", k.overrides}, {"weight_seed", k.seeds.weight},
          {"sets", sets},              {"timing", k.timing},
          {"tolerance", {{"atol", tol.atol}, {"rtol", tol.rtol}, {"scale_aware", tol.scale_aware},
                         {"nan_equal", tol.nan_equal}}},
          {"time_baseline", k.timed()},
          {"adjacent_baseline", k.timed() && k.cfg.kernelbench.adjacent_baseline},
          // a retry holds the device alone (take_device): the worker keeps none of torch's cache for it
          {"device_alone", k.device_hold.has_value()},
          // a candidate over the candidates' capacity may borrow the rest instead of running alone
          {"candidate_borrow_share", k.cfg.kernelbench.candidate_borrow_share},
          // skip the baseline only on the node the cached figures were measured on
          {"baseline_unless_identity", baselines.cached() ? baselines.expected_identity() : ""}};
}

// A prepare that never returned, `waited_s` of its `elapsed_s` spent waiting for other jobs: it
// holds the worker, which goes. The reference's fault only when its own time ran out; a quarter
// of it or more waiting (beyond what was given back: a stalled worker) is ours, judged again.
Decision prepare_overran(KernelBenchRun& k, double waited_s, double elapsed_s) {
  std::string why;  // where each of its threads was, for the log: a stall says what it waited for
  if (const auto stacks = k.wjob->worker().request({{"op", "stacks"}}, std::chrono::seconds(5), &why))
    log::warn("worker.stacks", {{"job_id", k.job.job_id()}, {"waited_s", waited_s}, {"elapsed_s", elapsed_s},
                                {"stacks", stacks->value("stacks", "")}});
  k.wjob->worker().kill();
  if (waited_s >= 0.25 * elapsed_s)
    return node_fault(fmt::format("the trusted worker's prepare ran {:.0f} s, {:.0f} s of it waiting for other "
                                  "jobs' work (its locks, the GPU lock): judged again",
                                  elapsed_s, waited_s));
  return job_fault(fmt::format("the reference did not finish within its own budget of {} ms",
                               k.cfg.kernelbench.reference_wall_ms));
}

// The worker's prepare that did not succeed: whose fault it was.
Decision prepare_failure(const std::optional<json>& prepared, const std::string& why, std::string& detail) {
  if (!prepared) {
    detail = why;
    // The worker went away under it (the tenant's worker serves several jobs, so the cause may
    // be another's): ours to retry, never the candidate's.
    return node_fault("trusted worker: " + why);
  }
  detail = prepared->value("error", "");
  if (detail.find("needs a GPU") != std::string::npos) return gpu_could_not_serve("no GPU visible to the trusted worker");
  if (prepared->value("fault", "") == "device") return gpu_could_not_serve(last_line(detail));
  // the node's memory at that moment, not the job's fault: retried, and no canary (a canary on a
  // device full of the judge's own sets failed and quarantined a healthy H100)
  if (prepared->value("fault", "") == "resources")
    return node_fault("the trusted worker ran out of device memory making the sets: " + last_line(detail));
  if (prepared->value("fault", "") == "worker") return node_fault("the trusted worker failed: " + last_line(detail));
  return job_fault("the reference failed: " + last_line(detail));
}

// The clean process's figures: measured now (and cached), or the cache's for this very node.
void record_baseline(KernelBenchRun& k, v1::Result& r, const KernelBenchBaselineCache& baselines,
                     const std::vector<ClockMark>& oracle_marks) {
  const json& orep = k.orep;
  if (orep.contains("baseline")) {
    k.baseline = {{"baseline", orep["baseline"]}, {"wall_gap_ms", clean_wall_gap(orep["baseline"])}};
    if (orep.contains("compiled_baseline")) k.baseline["compiled_baseline"] = orep["compiled_baseline"];
    if (const auto o = prepared_overhead_ms(orep["baseline"], oracle_marks)) k.baseline["mark_overhead_ms"] = *o;
    baselines.store(orep.value("node_identity", ""), k.baseline);
  } else if (orep.value("baseline_skipped", false) && baselines.cached()) {
    k.baseline = *baselines.cached();
    r.mutable_performance()->set_baseline_cached(true);
  }
  record_reference_timings(*r.mutable_performance(), k.baseline);
}

// 3b. The tenant's trusted worker: the problem's sets made on its device from secret seeds
// (compat: KernelBench's), the expected outputs kept there, the baseline when not cached. The
// reference has its own budget: its time never counts against the candidate's limit.
StageEnd prepare_oracle(KernelBenchRun& k, v1::Result& r, std::string& detail) {
  json sets;
  plan_sets_and_timing(k, sets);
  const KernelBenchBaselineCache baselines(private_dir(kernelbench_cache_root(k.cfg) / "kb-baseline"), k.task, k.compat,
                                           k.timing);
  k.wjob.emplace(trusted_worker(k.cfg, k.job.tenant(), k.gpu), k.job.job_id(), k.task.reference_py(),
                 sandbox_host_uid(k.cfg.sandbox.host_uid), sandbox_host_gid(k.cfg.sandbox.host_gid));
  const json prep_req = prepare_request(k, sets, baselines);
  std::optional<json> prepared;
  std::vector<ClockMark> oracle_marks;
  std::string why;
  const auto budget = std::chrono::milliseconds(k.cfg.kernelbench.reference_wall_ms);
  const auto asked = std::chrono::steady_clock::now();
  double waited_s = 0.0;
  {
    ClockReader reader(k.wjob->clock_socket());
    prepared = k.wjob->prepare(prep_req, budget, kJudgeWaitGrantLimits * budget, why, waited_s);
    oracle_marks = reader.finish();
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - asked;
  (*r.mutable_phase_seconds())["oracle.waited_for_others"] = waited_s;
  if (!prepared && elapsed >= budget) {
    detail = why;
    return prepare_overran(k, waited_s, elapsed.count());
  }
  if (!prepared || !prepared->value("ok", false)) return prepare_failure(prepared, why, detail);
  k.orep = std::move(*prepared);
  add_phases(r, "oracle", k.orep);
  r.mutable_system()->set_device_name(k.orep.value("device_name", ""));
  r.mutable_system()->set_framework_version("torch " + k.orep.value("torch_version", ""));
  record_baseline(k, r, baselines, oracle_marks);
  return {};
}

// The candidate role's sandbox and request: its builds, the job channel, the public part of the oracle.
HarnessRun candidate_role(const KernelBenchRun& k) {
  json oracle_public = {{"init_inputs", k.orep["init_inputs"]}, {"pool", k.orep.value("pool", json::array())},
                        {"sets", k.orep["sets"]}};
  HarnessRun c;
  c.role = "candidate";
  c.slot = SlotKind::Run;
  c.job_dir = k.cand_dir;
  c.wall_ms = k.limits.run_ms;
  c.output_bytes = k.limits.output_bytes;
  c.device_profile = k.device_profile;
  c.file_size_bytes = 1ull << 30;
  const WorkerJob* wjob = &*k.wjob;
  const auto most = std::chrono::milliseconds(std::uint64_t{kJudgeWaitGrantLimits} * k.limits.run_ms);
  c.wall_extension = [wjob, most] { return given_back(wjob->judge_seconds(std::chrono::seconds(5)), most); };
  c.binds = k.built.binds;
  c.binds.push_back({(k.build_dir / "candidate.py").string(), "/candidate.py", false});
  c.binds.push_back({k.wjob->channel_dir().string(), "/chan", true});
  c.request = {{"backend", k.backend},
               {"precision", precision_name(k.task.precision())},
               {"mode", k.compat ? "compat" : "strict"},
               {"candidate_path", "/candidate.py"},
               {"manifest_path", "/job/manifest.json"},
               {"fallback_ext_dir", "/tmp/ext-run"},
               {"arch_list", k.built.arch},
               {"weight_seed", k.seeds.weight},
               {"oracle", oracle_public},
               {"channel_path", WorkerJob::kChannelInCandidate},
               {"timing", k.timing},
               {"clock_path", "/job/clock"}};
  // The legality trace's kernel recorder (CUPTI callbacks): read-only at a fixed path; without it
  // the harness starts torch.profiler instead.
  if (k.backend != "cpu" && fs::is_regular_file(k.cfg.kernelbench.kernel_trace_lib)) {
    c.binds.push_back({k.cfg.kernelbench.kernel_trace_lib.string(), kKernelTraceInSandbox, false});
    c.request["kernel_trace_lib"] = kKernelTraceInSandbox;
  }
  return c;
}

// The device's memory as the worker's prepare saw it (0 on the cpu backend).
std::uint64_t device_total_bytes(const KernelBenchRun& k) { return k.orep.value("device_total_bytes", std::uint64_t{0}); }

// What the running candidates may hold of the device together: the operator's share, else what
// the worker leaves them.
std::uint64_t candidate_capacity(const KernelBenchRun& k) {
  if (const double share = k.cfg.kernelbench.candidate_device_share; share > 0)
    return static_cast<std::uint64_t>(share * static_cast<double>(device_total_bytes(k)));
  return k.orep.value("candidate_capacity_bytes", std::uint64_t{0});
}

// What a candidate at the head of the device-memory line may borrow of its worker's preparation
// budget (kernelbench.candidate_borrow_share of what the worker's prepare reported; none off a GPU).
Lending candidate_lending(const KernelBenchRun& k) {
  const auto lendable = k.orep.value("candidate_lendable_bytes", std::uint64_t{0});
  const double share = k.cfg.kernelbench.candidate_borrow_share;
  if (share <= 0 || !lendable) return {};
  return {static_cast<std::uint64_t>(share * static_cast<double>(lendable)),
          std::make_shared<WorkerLender>(k.wjob->shared_worker())};
}

// The admission's estimate beside what the candidate's torch allocated at its peak (the worker's
// shared sets not included): how far the estimate is from a real candidate's use.
void log_device_memory(const KernelBenchRun& k) {
  if (!k.cand.report || !k.cand.report->contains("device_peak_bytes")) return;
  log::info("kernelbench.device_memory",
            {{"job_id", k.job.job_id()},
             {"estimate_bytes", k.orep.value("candidate_device_bytes", std::uint64_t{0})},
             {"borrowed_bytes", k.device_hold ? k.device_hold->borrowed() : std::uint64_t{0}},
             {"candidate_peak_bytes", k.cand.report->value("device_peak_bytes", std::uint64_t{0})}});
}

// 4a. Candidate: its builds, its own code, and the job channel to the worker (input sets in,
// outputs out, as shared device memory); nothing the worker keeps.
void run_candidate(KernelBenchRun& k, v1::Result& r) {
  k.timing["audit_calls"] = k.orep.value("audits", json::array());  // the worker may keep fewer (device memory)
  const HarnessRun c = candidate_role(k);
  // Device memory: the candidate's copies of a set, its output and its timing pool, admitted
  // beside the other running candidates within what the worker leaves them (its cache and its
  // preparations are its own: candidate_share.py); waiting here is the node's time, not the candidate's.
  if (!k.device_hold)
    k.device_hold.emplace(device_budget(gpu_index(k.cfg)).acquire(k.orep.value("candidate_device_bytes", std::uint64_t{0}),
                                                                  candidate_capacity(k), &k.device_wait,
                                                                  k.cfg.kernelbench.admission_backfill_seconds,
                                                                  k.cfg.kernelbench.admission_largest_first,
                                                                  candidate_lending(k)));
  (*r.mutable_phase_seconds())["device_memory_wait"] = k.device_wait;
  if (k.device_hold->passed_head()) (*r.mutable_phase_seconds())["device_memory_backfill"] = 1;
  if (k.device_hold->borrowed()) (*r.mutable_phase_seconds())["device_memory_borrowed"] = 1;
  {
    // The daemon's clock: the sockets the candidate's harness and the worker (the reference's
    // loop beside the candidate's) send their loop marks to.
    ClockReader reader(k.cand_dir / "clock");
    ClockReader worker_clock(k.wjob->clock_socket());
    k.cand = run_harness(k.cfg, c);
    k.marks = reader.finish();
    k.worker_marks = worker_clock.finish();
  }
  if (k.cand.report) add_phases(r, "candidate", *k.cand.report);
  log_device_memory(k);
  r.mutable_resources()->set_cpu_seconds(k.cand.sandbox.cpu_seconds);
  r.mutable_resources()->set_wall_seconds(k.cand.sandbox.wall_seconds);
  r.mutable_resources()->set_peak_host_memory_bytes(k.cand.sandbox.peak_rss_bytes);
}

// The worker's {name: seconds} object `key` into phase_seconds as `prefix` + name.
void copy_seconds(const json& seen, const char* key, const std::string& prefix, v1::Result& r) {
  const json by = seen.value(key, json::object());  // a copy: items() keeps no temporary alive
  for (const auto& [name, seconds] : by.items())
    if (seconds.is_number()) (*r.mutable_phase_seconds())[prefix + name] = seconds.get<double>();
}

// The candidate's waits on the trusted worker, in phase_seconds: the GPU lock, the judge's requests
// (and per request kind, with the part queued behind other jobs' heavy sets), the settling, and
// the worker's own time on the job by step (worker.<step>).
void note_judge_waits(const json& seen, v1::Result& r) {
  auto& phases = *r.mutable_phase_seconds();
  phases["gpu_lock_wait"] = seen.value("lock_wait_seconds", 0.0);
  phases["judge_wait"] = seen.value("judge_seconds", 0.0);
  copy_seconds(seen, "judge_seconds_by_request", "judge_wait.", r);
  copy_seconds(seen, "worker_step_seconds", "worker.", r);
  phases["gpu_settle"] = seen.value("settle_seconds", 0.0);
}

// 4b. How the candidate's run ended: the worker's own faults and the node's waits first (ours,
// retried), then the channel's tamper check, then the harness's report.
StageEnd candidate_end(KernelBenchRun& k, v1::Result& r, std::string& detail) {
  std::string why;
  k.seen = k.wjob->results(std::chrono::seconds(60), why);
  const auto& seen = k.seen;
  if (!seen || !seen->value("ok", false)) {
    detail = seen ? seen->value("error", "") : why;
    return node_fault("trusted worker: " + (seen ? last_line(detail) : why));
  }
  if (const auto faults = seen->value("worker_faults", json::array()); !faults.empty()) {
    detail = faults.dump();  // the worker's own fault: ours, whatever the candidate then did
    const std::string first = "trusted worker: " + faults[0].get<std::string>();
    if (first.find("out of memory") != std::string::npos) return node_fault(first);  // memory, not the GPU's health
    return gpu_could_not_serve(first);
  }
  if (auto f = check_channel(*seen, r)) return Findings{*f};
  note_judge_waits(*seen, r);
  const HarnessStep& cand = k.cand;
  // Waiting for the judge (its sets and comparisons, other jobs' timed loops on the GPU lock) is the
  // node's time: the sandbox gave it back to the limit as it went (candidate_role). A limit that ran
  // out while a quarter of it went to a wait not given back (beyond the grant's bound, a worker that
  // did not answer) is ours (retried), never the candidate's TIMEOUT.
  const double granted = cand.sandbox.wall_extension_seconds;
  (*r.mutable_phase_seconds())["candidate.wall_extension"] = granted;
  if (const double waited = seen->value("judge_seconds", 0.0);
      cand.sandbox.outcome == kjsandbox::Outcome::WallTimeout && (waited - granted) * 1000.0 > 0.25 * k.limits.run_ms)
    return node_fault(fmt::format("the candidate's time limit ran out while it waited {:.0f} s for the judge "
                                  "(its sets, other jobs' timed loops on a busy node): judged again",
                                  waited));
  // Device memory: a shortage on a busy node is ours (retried with the device alone), not its RUNTIME_ERROR.
  if (cand.report && cand.report->contains("device_bytes_needed"))
    if (auto ours = device_shortage_is_ours({cand.report->value("device_bytes_needed", std::uint64_t{0}),
                                             k.device_hold->bytes(),
                                             device_total_bytes(k),
                                             k.ctx.delivery <= 1}))
      return node_fault(*ours);
  (*r.mutable_phase_seconds())["gpu_lock_held"] = seen->value("lock_seconds", 0.0);
  if (auto d = decide_harness(cand.sandbox, cand.report ? &*cand.report : nullptr, Party::Candidate, false,
                              k.limits.run_ms, cand.host_fault, has_device_ready_mark(k.marks))) {
    if (d->verdict == v1::TIMEOUT) {
      d->message += timeout_stage(k.marks, granted);
      log::info("kernelbench.candidate_timeout", {{"job_id", k.job.job_id()}, {"message", d->message},
                                                  {"wall_seconds", cand.sandbox.wall_seconds},
                                                  {"judge_seconds", seen->value("judge_seconds", 0.0)},
                                                  {"given_back_seconds", granted}});
    }
    // the harness's repair text: the exception and the candidate's own frames, not the traceback
    // through the judge's files (that stays in the report for the operator)
    detail = cand.report ? cand.report->value("feedback", "") : tail(cand.sandbox.stderr_data, 2000);
    if (cand.report && cand.report->contains("error"))
      log::info("kernelbench.candidate_error",
                {{"job_id", k.job.job_id()}, {"error", tail(cand.report->value("error", std::string()), 4000)}});
    return *d;
  }
  return {};
}

// 5. The worker's comparisons, made on its device with the job's tolerance.
StageEnd compare_outputs(KernelBenchRun& k, v1::Result& r) {
  KernelBenchFacts& facts = k.facts;
  facts.candidate = &*k.cand.report;
  facts.oracle = &k.orep;
  facts.worker = &*k.seen;
  facts.marks = &k.marks;
  facts.tol = k.tol;
  facts.timed = k.timed();
  if (auto f = check_before_compare(facts, r)) return Findings{*f};
  const json& compared = (*k.seen)["sets"];
  for (const auto& s : k.orep["sets"]) {
    if (s.contains("skipped") || s.value("timing_only", false)) continue;
    const std::string key = std::to_string(s["index"].get<int>());
    v1::CorrectnessSet cs;
    cs.set_name(s["name"].get<std::string>());
    cs.set_variant(s.value("variant", ""));
    v1::TensorComparison cmp = compared.contains(key) ? comparison_from_json(compared[key]) : v1::TensorComparison();
    if (!compared.contains(key)) {
      cmp.set_arg("output");
      cmp.set_problem("no output for this set");
    }
    cs.set_passed(cmp.passed());
    *cs.add_outputs() = cmp;
    *r.add_correctness() = cs;
  }
  if (auto wrong = correctness_finding(r.correctness())) return Findings{*wrong};
  return {};
}

// 6. Integrity (inputs, threads, audited calls, the daemon's clock) before legality: a memoizing
// candidate that skips its kernel on a cached call is a memoization cheat first.
StageEnd integrity_findings(KernelBenchRun& k, v1::Result& r) {
  if (k.timed() && k.baseline.contains("baseline")) k.facts.clean_wall_minus_event_ms = k.baseline.value("wall_gap_ms", 0.0);
  if (auto f = check_after_compare(k.facts, r)) k.found.push_back(*f);
  if (findings_end_the_job(k.found, k.mode)) return k.found;
  return {};
}

LegalityTrace legality_trace(const json& crep) {
  LegalityTrace trace;
  if (!crep.contains("trace")) {
    trace.tracer_problem = "the candidate's process reported no trace";
    return trace;
  }
  const auto& t = crep["trace"];
  trace.ops = t.value("ops", std::vector<std::string>{});
  trace.kernels = t.value("kernels", std::vector<std::string>{});
  trace.ext_calls = t.value("ext_calls", 0);
  trace.tracer_ok = t.value("tracer_ok", false);
  trace.tracer_problem = t.value("tracer_problem", "");
  trace.profiled_kernels = t.value("profiled_kernels", false);
  return trace;
}

// 7. Legality (the traced pass). Compat mode still times an illegal candidate, so KernelBench's
// own numbers can be reported beside kjudge's verdict; strict mode stops here.
StageEnd legality_findings(KernelBenchRun& k, v1::Result& r) {
  const LegalityTrace trace = legality_trace(*k.cand.report);
  const LegalityClass cls = classify_legality(trace);
  auto* leg = r.mutable_legality();
  leg->set_custom_kernels(trace.profiled_kernels ? cls.custom_kernels : static_cast<unsigned>(trace.ext_calls));
  leg->set_library_kernels(cls.library_kernels);
  for (const auto& op : cls.forbidden_ops) leg->add_forbidden_ops(op);
  if (auto f = decide_legality(trace, cls, /*libraries_allowed=*/false)) k.found.push_back(*f);
  if (findings_end_the_job(k.found, k.mode)) return k.found;
  return {};
}

// Per input set of the timing pool: the median call of the candidate's loop and of the reference's
// beside it. In the log only, for the operator: a kernel whose speed depends on which buffer it
// read (fidelity run 23: a 0.07 ms kernel at 0.07 or 0.09 ms from job to job, same fastest call)
// shows whether a set, and whose, was slow.
constexpr std::size_t kMaxPoolSetsLogged = 16;

json medians_by_set(const json& loop) {
  // the candidate's report is its own word: mismatched or odd arrays give no figure, not an error
  const std::vector<double> ms = json_doubles(loop, "trial_ms"), sets = json_doubles(loop, "trial_set");
  std::map<long long, std::vector<double>> by;
  if (ms.size() == sets.size())
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (sets[i] >= 0 && sets[i] < 1e6) by[static_cast<long long>(sets[i])].push_back(ms[i]);
  json out = json::object();
  if (by.size() > kMaxPoolSetsLogged) return out;
  for (auto& [set, v] : by) out[std::to_string(set)] = median(std::move(v));
  return out;
}

// compat: what the host did to KernelBench's loops (trials timed again, their wait, the launches'
// median and longest host time), in the log for the operator (docs/timing.md, "Compat mode").
void log_compat_host(const KernelBenchRun& k, const json& cand_timing) {
  const auto host = [](const json& loop) {
    return json{{"trials_redone", loop.value("trials_redone", json())}, {"host_wait_ms", loop.value("host_wait_ms", json())},
                {"launch_wall_ms", loop.value("launch_wall_ms", json())}};
  };
  const json* ref = k.seen && k.seen->contains("adjacent_baseline") ? &(*k.seen)["adjacent_baseline"] : nullptr;
  log::info("kernelbench.compat_host",
            {{"job_id", k.job.job_id()}, {"candidate", host(cand_timing)}, {"reference", ref ? host(*ref) : json()}});
}

void log_timing_by_set(const KernelBenchRun& k, const json& cand_timing) {
  if (!cand_timing.contains("trial_set")) {  // compat: KernelBench's loop, one set
    log_compat_host(k, cand_timing);
    return;
  }
  const json* ref = k.seen && k.seen->contains("adjacent_baseline") ? &(*k.seen)["adjacent_baseline"] : nullptr;
  log::info("kernelbench.timing_by_set",
            {{"job_id", k.job.job_id()},
             {"candidate_ms", medians_by_set(cand_timing)},
             {"reference_ms", ref ? medians_by_set(*ref) : json::object()}});
}

// 8. The speedup, from the candidate's timed loop and the reference's (made in
// pipeline/timing/speedup.cpp, end to end), and how near the device's roofline the candidate ran.
void record_speedup(KernelBenchRun& k, v1::Result& r) {
  const json& crep = *k.cand.report;
  if (!k.timed() || !crep.contains("timing")) return;
  log_timing_by_set(k, crep["timing"]);
  const KernelBenchLoops loops{.candidate = &crep["timing"], .prepared = &k.baseline, .seen = &*k.seen,
                               .candidate_marks = &k.marks, .worker_marks = &k.worker_marks, .compat = k.compat};
  make_kernelbench_speedup(r, loops, LoopDrift::of_device(gpu_index(k.cfg)));
  set_roofline(*r.mutable_performance(), k.orep.value("roofline", json()));
}

}  // namespace

void judge_kernelbench(const v1::Job& job, const JudgeContext& ctx, v1::Result& r, std::string& detail) {
  KernelBenchRun k(job, ctx, r);
  // A stage's end goes into the Result: a failure as it is, findings through final_verdict.
  const auto ended = [&](const StageEnd& end) {
    if (const auto* d = std::get_if<Decision>(&end)) record_verdict(r, *d);
    else if (const auto* found = std::get_if<Findings>(&end)) record_verdict(r, final_verdict(*found, k.mode));
    else return false;
    return true;
  };
  // The tenant's worker on the job's GPU, started now if it is not running: a cold one imports
  // torch and warms up (kjudge_worker/warm_up.py) while the candidate builds, not after it.
  trusted_worker(k.cfg, k.job.tenant(), k.gpu);
  if (ended(build(k, r, detail))) return;
  k.clock.start(v1::STAGE_ORACLE);
  if (ended(take_device(k, r)) || ended(prepare_oracle(k, r, detail))) return;
  k.clock.start(v1::STAGE_CANDIDATE);
  run_candidate(k, r);
  if (ended(candidate_end(k, r, detail))) return;
  k.clock.start(v1::STAGE_COMPARE);
  if (ended(compare_outputs(k, r))) return;
  k.clock.start(v1::STAGE_TIMING);
  if (ended(integrity_findings(k, r))) return;
  k.clock.start(v1::STAGE_LEGALITY);
  if (ended(legality_findings(k, r))) return;
  record_speedup(k, r);
  ended(k.found);
  if (k.found.empty()) k.clock.start(v1::STAGE_DONE);
}

}  // namespace kj
