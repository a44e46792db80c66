#include "pipeline/native_pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "pipeline/compare.h"
#include "pipeline/dtype.h"
#include "pipeline/inputs.h"
#include "pipeline/stats.h"
#include "pipeline/steps.h"
#include "pipeline/toolchain.h"
#include "pipeline/workspace.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kLogLimit = 16 * 1024;
constexpr unsigned kDefaultWarmup = 2, kDefaultTrials = 10;

class StageClock {
 public:
  explicit StageClock(v1::Result& r) : r_(r) {}
  void start(v1::Stage s) {
    stop();
    stage_ = s;
    r_.set_stage_reached(s);
    t0_ = std::chrono::steady_clock::now();
  }
  void stop() {
    if (stage_ == v1::STAGE_UNSPECIFIED) return;
    auto* st = r_.add_stages();
    st->set_stage(stage_);
    st->set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
    stage_ = v1::STAGE_UNSPECIFIED;
  }
  ~StageClock() { stop(); }

 private:
  v1::Result& r_;
  v1::Stage stage_ = v1::STAGE_UNSPECIFIED;
  std::chrono::steady_clock::time_point t0_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string truncate_log(const std::string& log, bool& truncated) {
  truncated = log.size() > kLogLimit;
  return truncated ? log.substr(0, kLogLimit) + "\n[... log truncated by kjudge ...]\n" : log;
}

std::string tail(const std::string& s, std::size_t n) { return s.size() > n ? "..." + s.substr(s.size() - n) : s; }

// One side (candidate or reference) of a native job.
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

// Build one party. Returns a decision when the build failed.
std::optional<Decision> build(const Side& p, const v1::NativeTask& task, const Toolchain& tc, const Workspace& ws,
                              const JudgeContext& ctx, const Budget& b, v1::CompileReport* report) {
  ws.write_file(p.dir / tc.source_name, p.source->text());
  const auto t0 = std::chrono::steady_clock::now();
  StepOutcome step;
  std::string log;
  if (!tc.compile_argv.empty()) {
    step = run_compiler(ctx.config, p.dir, tc.build_argv(task.compile_flags()), b.compile_ms);
    log = step.sandbox.stderr_data + step.sandbox.stdout_data;
  } else {
    v1::RunnerRequest req;
    req.set_mode(v1::RunnerRequest::BUILD);
    req.set_language(task.language());
    req.set_entry(task.entry());
    req.set_source_path("/job/" + tc.source_name);
    req.set_artifact_path("/job/" + tc.artifact_name);
    std::string opts;
    for (const auto& f : task.compile_flags()) opts += (opts.empty() ? "" : " ") + f;
    req.set_build_options(opts);
    step = run_runner(ctx.config, p.dir, {}, req, b.compile_ms, b.output_bytes, tc.gpu_profile);
    log = step.runner ? step.runner->build_log() : step.sandbox.stderr_data;
  }
  if (report) {
    bool cut = false;
    report->set_log(truncate_log(log, cut));
    report->set_log_truncated(cut || step.sandbox.stderr_truncated);
    report->set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  auto d = decide_build(step, p.who);
  if (report) report->set_ok(!d.has_value());
  return d;
}

v1::RunnerRequest run_request(const v1::NativeTask& task, const Toolchain& tc, const std::string& out_dir,
                              unsigned warmup, unsigned trials) {
  v1::RunnerRequest req;
  req.set_mode(v1::RunnerRequest::RUN);
  req.set_language(task.language());
  req.set_entry(task.entry());
  *req.mutable_args() = task.args();
  *req.mutable_launch() = task.launch();
  req.set_artifact_path("/job/" + tc.artifact_name);
  req.set_input_dir("/inputs");
  req.set_output_dir(out_dir);
  req.set_warmup(warmup);
  req.set_trials(trials);
  return req;
}

}  // namespace

void judge_native(const v1::Job& job, const JudgeContext& ctx, v1::Result& r, std::string& detail) {
  const auto& task = job.native();
  const Toolchain& tc = *toolchain_for(task.language());  // validated before
  const auto& cfg = ctx.config;
  const Budget budget{job.limits().compile_wall_ms() ? job.limits().compile_wall_ms() : cfg.limits.compile_wall_ms,
                      job.limits().run_wall_ms() ? job.limits().run_wall_ms() : cfg.limits.run_wall_ms,
                      job.limits().output_bytes() ? std::min(job.limits().output_bytes(), cfg.limits.output_bytes)
                                                  : cfg.limits.output_bytes};
  const auto& timing = job.options().timing();
  const unsigned warmup = timing.warmup() ? timing.warmup() : kDefaultWarmup;
  const unsigned trials = timing.skip() ? 0 : (timing.max_trials() ? timing.max_trials() : kDefaultTrials);
  const unsigned sets = std::max(1u, job.options().correctness_sets());

  Workspace ws(cfg.state_dir, job.job_id(), sandbox_host_uid(cfg.sandbox.host_uid),
               sandbox_host_gid(cfg.sandbox.host_gid), cfg.keep_job_dirs);
  Side cand{"candidate", Party::Candidate, &task.candidate(), ws.make_party_dir("candidate")};
  Side ref{"reference", Party::Reference, &task.reference_source(), ws.make_party_dir("reference")};
  StageClock clock(r);
  auto fail = [&](const Decision& d) {
    r.set_status(d.verdict);
    r.set_message(d.message);
  };

  clock.start(v1::STAGE_BUILD);
  if (auto d = build(cand, task, tc, ws, ctx, budget, r.mutable_compile())) return fail(*d);
  if (auto d = build(ref, task, tc, ws, ctx, budget, nullptr)) return fail(*d);

  std::vector<double> cand_trials, ref_trials;
  std::string cand_method, ref_method;
  double cpu = 0, wall = 0;
  std::uint64_t peak = 0;
  for (unsigned k = 0; k < sets; ++k) {
    const unsigned t = k == 0 ? trials : 0;  // time on the declared set only
    clock.start(v1::STAGE_ORACLE);
    const auto set = write_input_set(task, k, ws.inputs(k));
    const std::string out = fmt::format("/job/out{}", k);
    ws.make_owned_dir(ref.dir / fs::path(out).filename());
    auto ref_step = run_runner(cfg, ref.dir, set.dir, run_request(task, tc, out, warmup, t), budget.run_ms,
                               budget.output_bytes, tc.gpu_profile);
    if (auto d = decide_run(ref_step, Party::Reference, budget.run_ms)) {
      detail = tail(ref_step.sandbox.stderr_data, 2000);
      return fail(*d);
    }
    clock.start(v1::STAGE_CANDIDATE);
    ws.make_owned_dir(cand.dir / fs::path(out).filename());
    auto cand_step = run_runner(cfg, cand.dir, set.dir, run_request(task, tc, out, warmup, t), budget.run_ms,
                                budget.output_bytes, tc.gpu_profile);
    cpu += cand_step.sandbox.cpu_seconds;
    wall += cand_step.sandbox.wall_seconds;
    peak = std::max(peak, cand_step.sandbox.peak_rss_bytes);
    if (cand_step.runner) {
      r.mutable_system()->set_device_name(cand_step.runner->device_name());
      r.mutable_system()->set_runtime_version(cand_step.runner->platform_version());
      r.mutable_system()->set_driver_version(cand_step.runner->driver_version());
    }
    if (auto d = decide_run(cand_step, Party::Candidate, budget.run_ms)) {
      detail = tail(cand_step.sandbox.stderr_data, 2000);
      fail(*d);
      break;
    }
    if (k == 0) {
      cand_trials.assign(cand_step.runner->trial_ms().begin(), cand_step.runner->trial_ms().end());
      ref_trials.assign(ref_step.runner->trial_ms().begin(), ref_step.runner->trial_ms().end());
      cand_method = cand_step.runner->timing_method();
      ref_method = ref_step.runner->timing_method();
    }

    clock.start(v1::STAGE_COMPARE);
    auto* cs = r.add_correctness();
    cs->set_name(set.name);
    bool set_ok = true;
    for (int i = 0; i < task.args_size(); ++i) {
      const auto& a = task.args(i);
      if (!a.has_tensor() || a.tensor().role() == v1::IN) continue;
      const auto file = fmt::format("out{}/arg{}.bin", k, i);
      const std::string expected = read_file(ref.dir / file), actual = read_file(cand.dir / file);
      Tolerance tol = default_tolerance(a.tensor().dtype());
      if (job.options().has_tolerance()) tol = {job.options().tolerance().atol(), job.options().tolerance().rtol()};
      auto cmp = compare_tensor(a.tensor().dtype(), std::as_bytes(std::span(expected)), std::as_bytes(std::span(actual)), tol);
      cmp.set_arg(a.name());
      set_ok = set_ok && cmp.passed();
      *cs->add_outputs() = std::move(cmp);
    }
    cs->set_passed(set_ok);
  }
  r.mutable_resources()->set_cpu_seconds(cpu);
  r.mutable_resources()->set_wall_seconds(wall);
  r.mutable_resources()->set_peak_host_memory_bytes(peak);
  if (r.status() != v1::VERDICT_UNSPECIFIED) return;

  const Decision d = decide_correctness(r.correctness());
  fail(d);
  if (d.verdict != v1::OK) return;
  clock.start(v1::STAGE_TIMING);
  auto* perf = r.mutable_performance();
  *perf->mutable_candidate() = timing_stats(cand_trials, cand_method);
  *perf->mutable_baseline() = timing_stats(ref_trials, ref_method);
  if (perf->candidate().median_ms() > 0) perf->set_speedup(perf->baseline().median_ms() / perf->candidate().median_ms());
  clock.start(v1::STAGE_DONE);
}

}  // namespace kj
