#include "pipeline/native/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <variant>

#include "common/log.h"
#include "pipeline/build/claim.h"
#include "pipeline/checks/compare.h"
#include "pipeline/job/dtype.h"
#include "common/random.h"
#include "pipeline/checks/engine_checks.h"
#include "pipeline/job/limits.h"
#include "pipeline/checks/reference_meaning.h"
#include "pipeline/verdict/compile_diagnostics.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/job/inputs.h"
#include "pipeline/native/build_share.h"
#include "pipeline/run/pipeline_util.h"
#include "common/sha256.h"
#include "pipeline/timing/stats.h"
#include "pipeline/run/steps.h"
#include "pipeline/timing/clock_reader.h"
#include "pipeline/job/toolchain.h"
#include "pipeline/run/workspace.h"
#include "runner/engine_math.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {

constexpr unsigned kDefaultSets = 4;
constexpr unsigned kTimingPoolExtra = 3;  // extra declared-distribution sets the timed loop rotates through
constexpr unsigned kNativeAudits = 4;
constexpr double kTargetRelCi = 0.01;

struct Side {
  const char* name;
  Party who;
  const v1::SourceFile* source;
  fs::path dir;
};

struct Budget {
  std::uint32_t compile_ms, run_ms;
  std::uint64_t output_bytes;
};

// Content-addressed build cache: <state>/cache/build/<sha256>/<artifact>. The key covers everything
// the compiler sees (source, argv with the job's flags and the detected arch, toolchain identity).
std::string build_key(const v1::NativeTask& task, const Toolchain& tc, const std::string& source, const Config& cfg) {
  Sha256 h;
  h.field("kjudge-build-v1").field(v1::Language_Name(task.language())).field(source).field(tc.artifact_for(task));
  for (const auto& a : tc.argv_for(task, cfg)) h.field(a);
  if (tc.compile_argv.empty()) {  // OpenCL: the runner builds; options and device are part of the key
    h.field("runner-build");
    for (const auto& f : task.compile_flags()) h.field(f);
    h.field(task.entry());
  }
  return h.hex();
}

// The node's cache entry for a build, copied into the party's dir: whether it was there.
bool take_cached(const fs::path& cache_dir, const std::string& artifact, const fs::path& dir) {
  if (!fs::exists(cache_dir / artifact)) return false;
  std::error_code ec;
  fs::copy_file(cache_dir / artifact, dir / artifact, fs::copy_options::overwrite_existing, ec);
  return !ec;
}

// Publishes a build into the node's cache atomically: a private temp dir renamed into place (first wins).
void cache_build(const fs::path& cache_dir, const fs::path& artifact_file, const std::string& log) {
  std::error_code ec;
  const fs::path tmp = cache_dir.string() + fmt::format(".tmp{}", ::getpid()) + random_suffix();
  fs::create_directories(tmp, ec);
  fs::copy_file(artifact_file, tmp / artifact_file.filename(), ec);
  if (!ec) {
    std::ofstream(tmp / "log.txt", std::ios::binary) << log;
    fs::rename(tmp, cache_dir, ec);
  }
  fs::remove_all(tmp, ec);
}

// Another node's build of the same content (native/build_share.h), or the lease to make it here.
struct SharedClaim {
  std::optional<Decision> ended;                // the job's cancel or deadline ended the wait
  std::optional<FetchedNativeBuild> fetched;    // another node's build
  bool leased = false;
};

SharedClaim claim_native(BuildStore& store, const v1::Job& job, const std::string& key, const Config& cfg,
                         const Budget& b) {
  SharedClaim out;
  const BuildClaim claim =
      claim_for_job(store, job, cfg, key, std::chrono::milliseconds(b.compile_ms), /*build_nodes_build_it=*/false);
  out.ended = claim_ended_the_job(claim);
  if (claim.kind == BuildClaim::Artifact) {
    out.fetched = fetched_native_build(*claim.artifact);
    log::info("native.build_fetched", {{"job_id", job.job_id()}, {"key", key}, {"builder", claim.artifact->builder},
                                       {"usable", out.fetched.has_value()}});
  }
  out.leased = claim.kind == BuildClaim::Leased;
  return out;
}

std::optional<Decision> build(const Side& p, const v1::Job& job, const Toolchain& tc, const Workspace& ws,
                              const JudgeContext& ctx, const Budget& b, v1::CompileReport* report) {
  const auto& task = job.native();
  ws.write_file(p.dir / tc.source_name, p.source->text());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string artifact = tc.artifact_for(task);
  const auto done = [&](std::optional<Decision> d, const std::string& shown, bool hit, bool cut) {
    if (report) {
      report->set_ok(!d.has_value());
      report->set_cache_hit(hit);
      report->set_log(shown);
      report->set_log_truncated(cut);
      report->set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return d;
  };
  // OpenCL binaries depend on the device the runner picks: not cached (the build is cheap there).
  const bool cacheable = !tc.compile_argv.empty();
  const std::string key = build_key(task, tc, p.source->text(), ctx.config);
  const fs::path cache_dir = ctx.config.state_dir / "cache" / "build" / key;
  if (cacheable && take_cached(cache_dir, artifact, p.dir)) return done(std::nullopt, read_file(cache_dir / "log.txt"), true, false);

  BuildStore* store = cacheable ? ctx.builds : nullptr;
  HeldLease lease{nullptr, store ? native_shared_key(key, p.name, ctx.config) : ""};
  if (store) {
    SharedClaim claim = claim_native(*store, job, lease.key, ctx.config, b);
    if (claim.ended) return claim.ended;
    if (claim.fetched && claim.fetched->failure) return done(claim.fetched->failure, claim.fetched->log, true, false);
    if (claim.fetched) {
      write_file_atomic(p.dir / artifact, claim.fetched->artifact);
      fs::permissions(p.dir / artifact, fs::perms(0755));  // the sandbox's uid loads it, whatever our umask
      cache_build(cache_dir, p.dir / artifact, claim.fetched->log);
      return done(std::nullopt, claim.fetched->log, true, false);
    }
    if (claim.leased) lease.store = store;
  }

  StepOutcome step;
  std::string log;
  if (!tc.compile_argv.empty()) {
    step = run_compiler(ctx.config, p.dir, tc.argv_for(task, ctx.config), b.compile_ms);
    log = step.sandbox.stderr_data + step.sandbox.stdout_data;
  } else {
    v1::RunnerRequest req;
    req.set_mode(v1::RunnerRequest::BUILD);
    req.set_language(task.language());
    req.set_entry(task.entry());
    req.set_source_path("/job/" + tc.source_name);
    req.set_artifact_path("/job/" + artifact);
    std::string opts;
    for (const auto& f : task.compile_flags()) opts += (opts.empty() ? "" : " ") + f;
    req.set_build_options(opts);
    step = run_runner(ctx.config, p.dir, {}, req, b.compile_ms, b.output_bytes, tc.gpu_profile);
    log = step.runner ? step.runner->build_log() : step.sandbox.stderr_data;
  }
  log = without_sandbox_paths(log);  // the candidate's file as it named it, not the sandbox's /job/
  bool cut = false;
  const std::string shown = truncate_log(log, cut);
  const auto d = decide_build(step, p.who, log);
  const bool built = !d && cacheable && fs::exists(p.dir / artifact);
  if (built) cache_build(cache_dir, p.dir / artifact, shown);
  if (BuildStore* s = lease.release()) {
    std::optional<SharedBuild> shared;
    if (built) shared = native_shared_success(lease.key, read_file(p.dir / artifact), shown);
    else if (d) shared = native_shared_failure(lease.key, *d, shown);
    if (shared) s->publish(*shared);
    else s->release(lease.key);
  }
  return done(d, shown, false, cut || step.sandbox.stderr_truncated);
}

// What the node's device looked like on the last run of each language (for the baseline cache key,
// which must be known before the reference runs).
struct DeviceMemo {
  std::mutex mu;
  std::map<int, std::string> device;
};
DeviceMemo& device_memo() {
  static DeviceMemo m;
  return m;
}
std::string device_identity(const v1::RunnerReport& r) {
  return r.device_name() + "|" + r.driver_version() + "|" + r.platform_version();
}

std::string baseline_key(const v1::NativeTask& task, const Toolchain& tc, const Config& cfg, const std::string& device,
                         const v1::RunnerRequest& req) {
  Sha256 h;
  h.field("kjudge-baseline-v1").field(task.reference_source().text()).field(device);
  for (const auto& a : tc.argv_for(task, cfg)) h.field(a);
  v1::NativeTask shape = task;  // everything but the sources: args, launch, entry, flags
  shape.clear_candidate();
  shape.clear_reference_source();
  std::string bytes;
  shape.SerializeToString(&bytes);
  h.field(bytes);
  h.field(fmt::format("w{} min{} max{} b{} ci{} pool{} flush{}", req.warmup(), req.min_trials(), req.trials(),
                      req.budget_ms(), req.target_rel_ci(), req.timing_sets_size(), req.l2_flush()));
  return h.hex();
}

// One native job as it goes through the stages: what judge_native resolved once from the job
// (toolchain, limits, the trial plan, how many sets), the parties' directories, the sets and the
// requests both parties get, and the reference's baseline.
struct NativeRun {
  const v1::Job& job;
  const v1::NativeTask& task;
  const JudgeContext& ctx;
  const Config& cfg;
  const Toolchain& tc;
  Budget budget;
  TrialPlan trials;
  unsigned nsets, pool_extra;
  Workspace ws;
  Side cand, ref;
  std::vector<InputSet> sets;
  InputDigests expected_inputs;              // digests of what the daemon wrote
  v1::RunnerRequest base;                    // what both parties run (sets, timing, audits)
  fs::path inputs_root;
  v1::Performance baseline;  // baseline stats, outside_wall_ms = harness overhead per call, peak_gbps

  NativeRun(const v1::Job& j, const JudgeContext& c)
      : job(j), task(j.native()), ctx(c), cfg(c.config), tc(*toolchain_for(task.language())),  // validated before
        budget(budget_of(j, c.config)), trials(trial_plan(j)),
        nsets(j.options().correctness_sets() ? j.options().correctness_sets() : kDefaultSets),
        pool_extra(trials.max_trials ? kTimingPoolExtra : 0),
        ws(cfg.state_dir, j.job_id(), sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid),
           cfg.keep_job_dirs),
        cand{"candidate", Party::Candidate, &task.candidate(), ws.make_party_dir("candidate")},
        ref{"reference", Party::Reference, &task.reference_source(), ws.make_party_dir("reference")} {}

  unsigned total_sets() const { return nsets + pool_extra; }
  static Budget budget_of(const v1::Job& j, const Config& cfg) {
    const JobLimits limits = job_limits(j, cfg);
    return {limits.compile_ms, limits.run_ms, limits.output_bytes};
  }
};

// Oracle: every set from its own secret seed; the daemon keeps the digests of what it wrote.
void write_sets(NativeRun& n) {
  for (unsigned k = 0; k < n.nsets; ++k) n.sets.push_back(write_input_set(n.task, k, n.ws.inputs(k)));
  for (unsigned p = 0; p < n.pool_extra; ++p)
    n.sets.push_back(write_named_input_set(n.task, fmt::format("timing-{}", p + 1), n.ws.inputs(n.nsets + p)));
  n.expected_inputs = digest_input_sets(n.task, n.sets);
  n.inputs_root = n.ws.inputs(0).parent_path();
}

// Audited timed calls, chosen here and given to both parties (the reference's outputs for them are
// the expected ones); at least one after the first pass through the pool, where memoizing would pay.
void add_audits(v1::RunnerRequest& req, const TrialPlan& trials, unsigned pool_extra) {
  auto audit = pick_audit_calls(trials.min_trials, kNativeAudits);
  const unsigned pool_size = 1 + pool_extra;
  if (trials.min_trials > pool_size && std::all_of(audit.begin(), audit.end(), [&](unsigned a) { return a < pool_size; }))
    audit.back() = pool_size + pick_audit_calls(trials.min_trials - pool_size, 1).front();
  std::sort(audit.begin(), audit.end());
  audit.erase(std::unique(audit.begin(), audit.end()), audit.end());
  for (unsigned a : audit) req.add_audit_calls(a);
  req.set_audit_dir("/job/audit");
  std::uint64_t seed = 0;
  while (seed == 0) seed = std::stoull(random_suffix().substr(1), nullptr, 16);
  req.set_perturb_seed(seed);
}

// The request both parties run: every set, the timing pool, the trial plan, the audits.
void make_request(NativeRun& n) {
  const auto& task = n.task;
  const auto& timing = n.job.options().timing();
  v1::RunnerRequest& base = n.base;
  base.set_mode(v1::RunnerRequest::RUN);
  base.set_language(task.language());
  base.set_entry(task.entry());
  *base.mutable_args() = task.args();
  *base.mutable_launch() = task.launch();
  base.set_artifact_path("/job/" + n.tc.artifact_for(task));
  for (unsigned k = 0; k < n.total_sets(); ++k) {
    auto* s = base.add_sets();
    s->set_input_dir(fmt::format("/inputs/set{}", k));
    s->set_output_dir(fmt::format("/job/out{}", k));
    n.ws.make_owned_dir(n.ref.dir / fmt::format("out{}", k));
    n.ws.make_owned_dir(n.cand.dir / fmt::format("out{}", k));
  }
  base.add_timing_sets(0);
  for (unsigned p = 0; p < n.pool_extra; ++p) base.add_timing_sets(n.nsets + p);
  base.set_warmup(n.trials.warmup);
  base.set_trials(n.trials.max_trials);
  base.set_min_trials(n.trials.min_trials);
  base.set_budget_ms(timing.budget_ms() ? timing.budget_ms() : std::min(n.budget.run_ms / 4, 3000u));
  base.set_target_rel_ci(kTargetRelCi);
  base.set_l2_flush(task.language() == v1::CUDA);
  base.set_clock_path("/job/clock");
  if (n.trials.max_trials) add_audits(base, n.trials, n.pool_extra);
}

StepOutcome run_party(const NativeRun& n, const Side& side, const v1::RunnerRequest& req, std::vector<ClockMark>& marks) {
  return run_runner_clocked(n.cfg, side.dir, n.inputs_root, req, n.budget.run_ms, n.budget.output_bytes,
                            n.tc.gpu_profile, "clock", marks);
}

// This node's timing of the reference for the same request, when it has one for this device.
std::optional<v1::Performance> cached_baseline(const NativeRun& n, const std::string& memo_device) {
  if (!n.trials.max_trials || memo_device.empty()) return std::nullopt;
  const fs::path file = n.cfg.state_dir / "cache" / "baseline" / (baseline_key(n.task, n.tc, n.cfg, memo_device, n.base) + ".pb");
  v1::Performance p;
  if (fs::exists(file) && p.ParseFromString(read_file(file))) return p;
  return std::nullopt;
}

// The reference's timed loop as the baseline, kept for later jobs on this device.
void store_baseline(NativeRun& n, const v1::RunnerReport& rr, const std::vector<ClockMark>& marks, const std::string& device) {
  *n.baseline.mutable_baseline() =
      timing_stats(std::vector<double>(rr.trial_ms().begin(), rr.trial_ms().end()), rr.timing_method());
  n.baseline.set_outside_wall_ms(harness_overhead_per_call(rr, marks));
  n.baseline.set_peak_gbps(rr.flush_bandwidth_gbps());
  {
    std::lock_guard lock(device_memo().mu);
    device_memo().device[n.task.language()] = device;
  }
  const fs::path store = n.cfg.state_dir / "cache" / "baseline" / (baseline_key(n.task, n.tc, n.cfg, device, n.base) + ".pb");
  std::error_code ec;
  fs::create_directories(store.parent_path(), ec);
  write_file_atomic(store, n.baseline.SerializeAsString());
}

// Reference: expected outputs always; its timing from the cache when this node has it.
std::optional<Decision> run_reference(NativeRun& n, v1::Result& r, std::string& detail) {
  std::string memo_device;
  {
    std::lock_guard lock(device_memo().mu);
    memo_device = device_memo().device[n.task.language()];
  }
  const std::optional<v1::Performance> cached = cached_baseline(n, memo_device);
  v1::RunnerRequest req = n.base;
  if (cached) {  // only as many calls as the audits need
    const unsigned audit_span = req.audit_calls().empty() ? 0 : req.audit_calls(req.audit_calls_size() - 1) + 1;
    req.set_trials(audit_span);
    req.set_min_trials(audit_span);
  }
  std::vector<ClockMark> marks;
  auto step = run_party(n, n.ref, req, marks);
  if (auto d = decide_run(step, Party::Reference, n.budget.run_ms)) {
    detail = tail(step.sandbox.stderr_data, 2000);
    return d;
  }
  if (auto d = decide_reference_meaning(n.task, n.ref.dir, n.nsets, n.expected_inputs)) return d;
  const std::string device = device_identity(*step.runner);
  if (cached && device == memo_device) {
    n.baseline = *cached;
    r.mutable_performance()->set_baseline_cached(true);
    return std::nullopt;
  }
  if (!n.trials.max_trials) return std::nullopt;
  if (cached) {  // the device changed under the memo: time the reference now after all
    marks.clear();
    step = run_party(n, n.ref, n.base, marks);
    if (auto d = decide_run(step, Party::Reference, n.budget.run_ms)) return d;
  }
  store_baseline(n, *step.runner, marks, device);
  return std::nullopt;
}

void record_candidate_run(const StepOutcome& step, v1::Result& r) {
  r.mutable_resources()->set_cpu_seconds(step.sandbox.cpu_seconds);
  r.mutable_resources()->set_wall_seconds(step.sandbox.wall_seconds);
  r.mutable_resources()->set_peak_host_memory_bytes(step.sandbox.peak_rss_bytes);
  if (step.runner) {
    r.mutable_system()->set_device_name(step.runner->device_name());
    r.mutable_system()->set_runtime_version(step.runner->platform_version());
    r.mutable_system()->set_driver_version(step.runner->driver_version());
  }
}

// Every set's outputs against the reference's (the job's tolerance, if it sets one); the timing
// pool's sets are listed only when they fail: the declared sets are the contract.
void compare_outputs(const NativeRun& n, const Tolerance* tol, v1::Result& r) {
  for (unsigned k = 0; k < n.total_sets(); ++k) {
    v1::CorrectnessSet cs = compare_set(n.task, n.sets[k].name, n.ref.dir / fmt::format("out{}", k),
                                        n.cand.dir / fmt::format("out{}", k), tol);
    if (k < n.nsets || !cs.passed()) *r.add_correctness() = std::move(cs);
  }
}

void record_performance(const NativeRun& n, const v1::RunnerReport& cr, v1::Result& r) {
  if (!n.trials.max_trials) return;
  auto* perf = r.mutable_performance();
  *perf->mutable_candidate() =
      timing_stats(std::vector<double>(cr.trial_ms().begin(), cr.trial_ms().end()), cr.timing_method());
  *perf->mutable_baseline() = n.baseline.baseline();
  if (perf->candidate().median_ms() > 0) perf->set_speedup(perf->baseline().median_ms() / perf->candidate().median_ms());
  perf->set_stop_reason(cr.stop_reason());
  perf->set_median_rel_ci(median_rel_ci_of(cr));
}

EngineFacts facts_of(const NativeRun& n, const v1::RunnerReport& report, const std::vector<ClockMark>& marks,
                     const Tolerance* tol) {
  EngineFacts facts;
  facts.task = &n.task;
  facts.sets = &n.sets;
  facts.expected_inputs = &n.expected_inputs;
  facts.ref_dir = n.ref.dir;
  facts.cand_dir = n.cand.dir;
  facts.report = &report;
  facts.marks = &marks;
  facts.baseline = &n.baseline;
  facts.audit_calls.assign(n.base.audit_calls().begin(), n.base.audit_calls().end());
  facts.override_tol = tol;
  facts.timed = n.trials.max_trials > 0;
  return facts;
}

// One run of the candidate: its run, its outputs compared, then integrity (everything decided from
// facts outside the candidate's reach or cross-checked). nullopt: a clean run; else the failure
// (a Decision that ends the job) or the finding.
using CandidateEnd = std::variant<std::monostate, Decision, Finding>;
CandidateEnd run_candidate(NativeRun& n, StageClock& clock, v1::Result& r, std::string& detail) {
  std::vector<ClockMark> marks;
  auto step = run_party(n, n.cand, n.base, marks);
  record_candidate_run(step, r);
  if (auto d = decide_run(step, Party::Candidate, n.budget.run_ms)) {
    detail = tail(step.sandbox.stderr_data, 2000);
    return *d;
  }
  clock.start(v1::STAGE_COMPARE);
  std::optional<Tolerance> job_tol;
  if (n.job.options().has_tolerance())
    job_tol = Tolerance{n.job.options().tolerance().atol(), n.job.options().tolerance().rtol()};
  const Tolerance* tol = job_tol ? &*job_tol : nullptr;
  compare_outputs(n, tol, r);
  if (auto wrong = correctness_finding(r.correctness())) return *wrong;
  clock.start(v1::STAGE_TIMING);
  record_performance(n, *step.runner, r);
  if (auto found = check_integrity(facts_of(n, *step.runner, marks, tol), r)) return *found;
  return std::monostate{};
}

// Before a confirming run: a burst of load on the host (a link step, a process starting) may pass
// (the device stays locked; a pause this short is nothing beside a run).
constexpr std::chrono::milliseconds kConfirmingRunPause{100};

// The candidate's runs: one, and again while only the daemon's clock disagrees, up to
// kClockConfirmingRuns in all (needs_confirming_run); the Result is the last run's. After a
// re-run, phase_seconds["candidate_runs"] says how many it took, and one that agreed is flagged
// outside_clock_rerun_agreed.
CandidateEnd run_candidate_confirmed(NativeRun& n, StageClock& clock, v1::Result& r, std::string& detail) {
  const v1::Result before = r;
  for (int runs = 1;; ++runs) {
    CandidateEnd end = run_candidate(n, clock, r, detail);
    const auto* found = std::get_if<Finding>(&end);
    if (found && needs_confirming_run(*found, r, runs)) {
      std::this_thread::sleep_for(kConfirmingRunPause);
      r = before;
      clock.start(v1::STAGE_CANDIDATE);
      continue;
    }
    if (runs > 1) {
      (*r.mutable_phase_seconds())["candidate_runs"] = runs;
      if (std::holds_alternative<std::monostate>(end)) r.mutable_legality()->add_flags("outside_clock_rerun_agreed");
    }
    return end;
  }
}

}  // namespace

// Stages: build both parties; the device taken; the oracle's sets; the reference (expected
// outputs, baseline); the candidate (run, compare, integrity), run again when only the daemon's
// clock disagrees; the verdict from what was found.
void judge_native(const v1::Job& job, const JudgeContext& ctx, v1::Result& r, std::string& detail) {
  NativeRun n(job, ctx);
  StageClock clock(r);
  auto fail = [&](const Decision& d) { record_verdict(r, d); };
  auto conclude = [&](const Findings& found) { record_verdict(r, final_verdict(found, judge_mode(job))); };

  clock.start(v1::STAGE_BUILD);
  if (auto d = build(n.cand, job, n.tc, n.ws, ctx, n.budget, r.mutable_compile())) return fail(*d);
  if (auto d = build(n.ref, job, n.tc, n.ws, ctx, n.budget, nullptr)) return fail(*d);

  // From here to the verdict the device is this job's alone (design §3); other slots' builds go on.
  std::optional<GpuLock> device_lock;
  if (!n.tc.gpu_profile.empty()) {
    device_lock.emplace(gpu_lock_file(n.cfg));
    (*r.mutable_phase_seconds())["gpu_lock_wait"] = device_lock->seconds_waited();
    if (auto d = decide_gpu_still_healthy()) return fail(*d);  // a canary holds the lock while it checks
  }

  clock.start(v1::STAGE_ORACLE);
  write_sets(n);
  make_request(n);
  if (auto d = run_reference(n, r, detail)) return fail(*d);

  // When only the daemon's clock disagrees, more runs confirm it before the verdict is SUSPICIOUS:
  // a loaded host (scheduler wake-ups around a CPU device's kernels) stretches some loops, a cheat
  // stretches every one.
  clock.start(v1::STAGE_CANDIDATE);
  const CandidateEnd end = run_candidate_confirmed(n, clock, r, detail);
  if (const auto* d = std::get_if<Decision>(&end)) return fail(*d);
  if (const auto* found = std::get_if<Finding>(&end)) return conclude({*found});
  conclude({});
  clock.start(v1::STAGE_DONE);
}

}  // namespace kj
