#include "pipeline/native_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>

#include "common/log.h"
#include "pipeline/build_claim.h"
#include "pipeline/compare.h"
#include "pipeline/dtype.h"
#include "common/random.h"
#include "pipeline/engine_checks.h"
#include "pipeline/job_limits.h"
#include "pipeline/reference_meaning.h"
#include "pipeline/compile_diagnostics.h"
#include "pipeline/gpu_lock.h"
#include "pipeline/inputs.h"
#include "pipeline/native_build_share.h"
#include "pipeline/pipeline_util.h"
#include "pipeline/sha256.h"
#include "pipeline/stats.h"
#include "pipeline/steps.h"
#include "pipeline/toolchain.h"
#include "pipeline/workspace.h"
#include "runner/engine_math.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {

constexpr unsigned kDefaultSets = 4;
constexpr unsigned kTimingPoolExtra = 3;  // extra declared-distribution sets the timed loop rotates through
constexpr unsigned kAudits = 4;
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

// Another node's build of the same content (native_build_share.h), or the lease to make it here.
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

}  // namespace

void judge_native(const v1::Job& job, const JudgeContext& ctx, v1::Result& r, std::string& detail) {
  const auto& task = job.native();
  const Toolchain& tc = *toolchain_for(task.language());  // validated before
  const auto& cfg = ctx.config;
  const JobLimits limits = job_limits(job, cfg);
  const Budget budget{limits.compile_ms, limits.run_ms, limits.output_bytes};
  const auto& timing = job.options().timing();
  const TrialPlan trials = trial_plan(job);
  const unsigned warmup = trials.warmup, max_trials = trials.max_trials, min_trials = trials.min_trials;
  const unsigned budget_ms = timing.budget_ms() ? timing.budget_ms() : std::min(budget.run_ms / 4, 3000u);
  const unsigned nsets = job.options().correctness_sets() ? job.options().correctness_sets() : kDefaultSets;
  const unsigned pool_extra = max_trials ? kTimingPoolExtra : 0;
  const unsigned total_sets = nsets + pool_extra;

  Workspace ws(cfg.state_dir, job.job_id(), sandbox_host_uid(cfg.sandbox.host_uid),
               sandbox_host_gid(cfg.sandbox.host_gid), cfg.keep_job_dirs);
  Side cand{"candidate", Party::Candidate, &task.candidate(), ws.make_party_dir("candidate")};
  Side ref{"reference", Party::Reference, &task.reference_source(), ws.make_party_dir("reference")};
  StageClock clock(r);
  auto fail = [&](const Decision& d) { record_verdict(r, d); };
  auto conclude = [&](const Findings& found) { record_verdict(r, final_verdict(found, judge_mode(job))); };

  clock.start(v1::STAGE_BUILD);
  if (auto d = build(cand, job, tc, ws, ctx, budget, r.mutable_compile())) return fail(*d);
  if (auto d = build(ref, job, tc, ws, ctx, budget, nullptr)) return fail(*d);

  // From here to the verdict the device is this job's alone (design §3); other slots' builds go on.
  std::optional<GpuLock> device_lock;
  if (!tc.gpu_profile.empty()) {
    device_lock.emplace(gpu_lock_file(cfg));
    (*r.mutable_phase_seconds())["gpu_lock_wait"] = device_lock->seconds_waited();
    if (auto d = decide_gpu_still_healthy()) return fail(*d);  // a canary holds the lock while it checks
  }

  // Oracle: every set from its own secret seed; the daemon keeps the digests of what it wrote.
  clock.start(v1::STAGE_ORACLE);
  std::vector<InputSet> sets;
  for (unsigned k = 0; k < nsets; ++k) sets.push_back(write_input_set(task, k, ws.inputs(k)));
  for (unsigned p = 0; p < pool_extra; ++p)
    sets.push_back(write_named_input_set(task, fmt::format("timing-{}", p + 1), ws.inputs(nsets + p)));
  const auto expected_inputs = digest_input_sets(task, sets);
  v1::RunnerRequest base;
  base.set_mode(v1::RunnerRequest::RUN);
  base.set_language(task.language());
  base.set_entry(task.entry());
  *base.mutable_args() = task.args();
  *base.mutable_launch() = task.launch();
  base.set_artifact_path("/job/" + tc.artifact_for(task));
  for (unsigned k = 0; k < total_sets; ++k) {
    auto* s = base.add_sets();
    s->set_input_dir(fmt::format("/inputs/set{}", k));
    s->set_output_dir(fmt::format("/job/out{}", k));
    ws.make_owned_dir(ref.dir / fmt::format("out{}", k));
    ws.make_owned_dir(cand.dir / fmt::format("out{}", k));
  }
  base.add_timing_sets(0);
  for (unsigned p = 0; p < pool_extra; ++p) base.add_timing_sets(nsets + p);
  base.set_warmup(warmup);
  base.set_trials(max_trials);
  base.set_min_trials(min_trials);
  base.set_budget_ms(budget_ms);
  base.set_target_rel_ci(kTargetRelCi);
  base.set_l2_flush(task.language() == v1::CUDA);
  base.set_clock_path("/job/clock");
  // Audited timed calls, chosen here and given to both parties (the reference's outputs for them are
  // the expected ones); at least one after the first pass through the pool, where memoizing would pay.
  if (max_trials) {
    auto audit = pick_audit_calls(min_trials, kAudits);
    const unsigned pool_size = 1 + pool_extra;
    if (min_trials > pool_size && std::all_of(audit.begin(), audit.end(), [&](unsigned a) { return a < pool_size; }))
      audit.back() = pool_size + pick_audit_calls(min_trials - pool_size, 1).front();
    std::sort(audit.begin(), audit.end());
    audit.erase(std::unique(audit.begin(), audit.end()), audit.end());
    for (unsigned a : audit) base.add_audit_calls(a);
    base.set_audit_dir("/job/audit");
    std::uint64_t seed = 0;
    while (seed == 0) seed = std::stoull(random_suffix().substr(1), nullptr, 16);
    base.set_perturb_seed(seed);
  }
  const fs::path inputs_root = ws.inputs(0).parent_path();

  // Reference: expected outputs always; its timing from the cache when this node has it.
  std::string memo_device;
  {
    std::lock_guard lock(device_memo().mu);
    memo_device = device_memo().device[task.language()];
  }
  const std::string key = max_trials && !memo_device.empty() ? baseline_key(task, tc, cfg, memo_device, base) : "";
  const fs::path cache_file = key.empty() ? fs::path() : cfg.state_dir / "cache" / "baseline" / (key + ".pb");
  std::optional<v1::Performance> cached;
  if (!key.empty() && fs::exists(cache_file)) {
    v1::Performance p;
    if (p.ParseFromString(read_file(cache_file))) cached = p;
  }
  v1::RunnerRequest ref_req = base;
  const unsigned audit_span = base.audit_calls().empty() ? 0 : base.audit_calls(base.audit_calls_size() - 1) + 1;
  if (cached) {  // only as many calls as the audits need
    ref_req.set_trials(audit_span);
    ref_req.set_min_trials(audit_span);
  }
  std::vector<ClockMark> ref_marks, cand_marks;
  auto ref_step = run_runner_clocked(cfg, ref.dir, inputs_root, ref_req, budget.run_ms, budget.output_bytes,
                                     tc.gpu_profile, "clock", ref_marks);
  if (auto d = decide_run(ref_step, Party::Reference, budget.run_ms)) {
    detail = tail(ref_step.sandbox.stderr_data, 2000);
    return fail(*d);
  }
  if (auto d = decide_reference_meaning(task, ref.dir, nsets, expected_inputs)) return fail(*d);
  const std::string ref_device = device_identity(*ref_step.runner);
  v1::Performance baseline;  // baseline stats, outside_wall_ms = harness overhead per call, peak_gbps
  if (cached && ref_device == memo_device) {
    baseline = *cached;
    r.mutable_performance()->set_baseline_cached(true);
  } else if (max_trials) {
    if (cached) {  // the device changed under the memo: time the reference now after all
      ref_req = base;
      ref_step = run_runner_clocked(cfg, ref.dir, inputs_root, ref_req, budget.run_ms, budget.output_bytes,
                                    tc.gpu_profile, "clock", ref_marks);
      if (auto d = decide_run(ref_step, Party::Reference, budget.run_ms)) return fail(*d);
    }
    const auto& rr = *ref_step.runner;
    *baseline.mutable_baseline() =
        timing_stats(std::vector<double>(rr.trial_ms().begin(), rr.trial_ms().end()), rr.timing_method());
    baseline.set_outside_wall_ms(harness_overhead_per_call(rr, ref_marks));
    baseline.set_peak_gbps(rr.flush_bandwidth_gbps());
    {
      std::lock_guard lock(device_memo().mu);
      device_memo().device[task.language()] = ref_device;
    }
    const std::string store_key = baseline_key(task, tc, cfg, ref_device, base);
    const fs::path store = cfg.state_dir / "cache" / "baseline" / (store_key + ".pb");
    std::error_code ec;
    fs::create_directories(store.parent_path(), ec);
    write_file_atomic(store, baseline.SerializeAsString());
  }

  // Candidate: secret audit positions, the daemon's clock on its timed loop. When only the daemon's
  // clock disagrees, a second run confirms it before the verdict is SUSPICIOUS: a loaded host
  // (scheduler wake-ups around a CPU device's kernels) stretches one loop, a cheat stretches every one.
  clock.start(v1::STAGE_CANDIDATE);
  const v1::Result before_candidate = r;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      r = before_candidate;
      cand_marks.clear();
      clock.start(v1::STAGE_CANDIDATE);
    }
    const v1::RunnerRequest& cand_req = base;
    auto cand_step = run_runner_clocked(cfg, cand.dir, inputs_root, cand_req, budget.run_ms, budget.output_bytes,
                                        tc.gpu_profile, "clock", cand_marks);
    r.mutable_resources()->set_cpu_seconds(cand_step.sandbox.cpu_seconds);
    r.mutable_resources()->set_wall_seconds(cand_step.sandbox.wall_seconds);
    r.mutable_resources()->set_peak_host_memory_bytes(cand_step.sandbox.peak_rss_bytes);
    if (cand_step.runner) {
      r.mutable_system()->set_device_name(cand_step.runner->device_name());
      r.mutable_system()->set_runtime_version(cand_step.runner->platform_version());
      r.mutable_system()->set_driver_version(cand_step.runner->driver_version());
    }
    if (auto d = decide_run(cand_step, Party::Candidate, budget.run_ms)) {
      detail = tail(cand_step.sandbox.stderr_data, 2000);
      return fail(*d);
    }

    clock.start(v1::STAGE_COMPARE);
    const Tolerance* override_tol = nullptr;
    Tolerance job_tol{};
    if (job.options().has_tolerance()) {
      job_tol = {job.options().tolerance().atol(), job.options().tolerance().rtol()};
      override_tol = &job_tol;
    }
    for (unsigned k = 0; k < total_sets; ++k) {
      v1::CorrectnessSet cs = compare_set(task, sets[k].name, ref.dir / fmt::format("out{}", k),
                                          cand.dir / fmt::format("out{}", k), override_tol);
      // the timing pool's sets are listed only when they fail: the declared sets are the contract
      if (k < nsets || !cs.passed()) *r.add_correctness() = std::move(cs);
    }
    if (auto wrong = correctness_finding(r.correctness())) return conclude({*wrong});

    // Integrity: everything decided from facts outside the candidate's reach or cross-checked.
    clock.start(v1::STAGE_TIMING);
    EngineFacts facts;
    facts.task = &task;
    facts.sets = &sets;
    facts.expected_inputs = &expected_inputs;
    facts.ref_dir = ref.dir;
    facts.cand_dir = cand.dir;
    facts.report = &*cand_step.runner;
    facts.marks = &cand_marks;
    facts.baseline = &baseline;
    facts.audit_calls.assign(cand_req.audit_calls().begin(), cand_req.audit_calls().end());
    facts.override_tol = override_tol;
    facts.timed = max_trials > 0;
    auto* perf = r.mutable_performance();
    if (max_trials) {
      const auto& cr = *cand_step.runner;
      *perf->mutable_candidate() =
          timing_stats(std::vector<double>(cr.trial_ms().begin(), cr.trial_ms().end()), cr.timing_method());
      *perf->mutable_baseline() = baseline.baseline();
      if (perf->candidate().median_ms() > 0)
        perf->set_speedup(perf->baseline().median_ms() / perf->candidate().median_ms());
      perf->set_stop_reason(cr.stop_reason());
      perf->set_median_rel_ci(median_rel_ci_of(cr));
    }
    if (auto found = check_integrity(facts, r)) {
      if (attempt == 0 && needs_confirming_run(*found, r)) continue;
      return conclude({*found});
    }
    if (attempt > 0) r.mutable_legality()->add_flags("outside_clock_rerun_agreed");
    break;
  }
  conclude({});
  clock.start(v1::STAGE_DONE);
}

}  // namespace kj
