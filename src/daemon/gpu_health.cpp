#include "daemon/gpu_health.h"

#include <ctime>
#include <future>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "canary/exit_codes.h"
#include "common/log.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/run/sandbox_profiles.h"
#include "pipeline/run/workspace.h"

namespace kj {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string iso_utc(std::chrono::system_clock::time_point t) {
  if (t == std::chrono::system_clock::time_point{}) return "";
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

const char* to_string(GpuJobOutcome o) {
  switch (o) {
    case GpuJobOutcome::Clean: return "clean";
    case GpuJobOutcome::Killed: return "killed";
    case GpuJobOutcome::Timeout: return "timeout";
    case GpuJobOutcome::CudaFault: return "cuda_fault";
    case GpuJobOutcome::Unavailable: return "gpu_unavailable";
    case GpuJobOutcome::StuckChild: return "stuck_child";
  }
  return "unknown";
}

const char* to_string(GpuState s) {
  switch (s) {
    case GpuState::Healthy: return "healthy";
    case GpuState::Checking: return "checking";
    case GpuState::Quarantined: return "quarantined";
  }
  return "unknown";
}

struct GpuHealth::Gpu {
  bool quarantined = false;
  std::string reason;
  std::chrono::system_clock::time_point since{};
  bool reprobe_eligible = false;
  unsigned streak = 0;
  SteadyClock::time_point next_probe{};
  // A canary is in flight (after_job's or reprobe's): one at a time per GPU.
  bool running = false;
  // after_job generations: a fault asks for run `requested`; it is answered once `completed`
  // reaches it, by a canary that started after the fault.
  std::uint64_t requested = 0, completed = 0;
  // Bumped by every quarantine and clear: a re-probe that straddles one is discarded.
  std::uint64_t epoch = 0;
  std::uint64_t canaries = 0, failures = 0, quarantines = 0;
  std::string last_canary;

  bool usable() const { return !quarantined && !running && completed >= requested; }
  // Back to Healthy (an operator's clear, or enough re-probe passes).
  void release() {
    quarantined = false;
    reason.clear();
    since = {};
    reprobe_eligible = false;
    streak = 0;
    ++epoch;
  }
  GpuState state() const {
    if (quarantined) return GpuState::Quarantined;
    return usable() ? GpuState::Healthy : GpuState::Checking;
  }
  GpuStatus status(int gpu) const {
    return {.gpu = gpu,
            .state = state(),
            .reason = reason,
            .since = since,
            .reprobe_eligible = reprobe_eligible,
            .reprobe_streak = streak,
            .pending_checks = requested - completed,
            .canaries = canaries,
            .canary_failures = failures,
            .quarantines = quarantines,
            .last_canary = last_canary};
  }
};

GpuHealth::GpuHealth(CanaryFn canary, GpuHealthOptions opts) : canary_(std::move(canary)), opts_(std::move(opts)) {
  if (!opts_.clock) opts_.clock = [] { return SteadyClock::now(); };
  if (opts_.reprobe_passes == 0) opts_.reprobe_passes = 1;
}

GpuHealth::~GpuHealth() = default;

GpuHealth::Gpu& GpuHealth::gpu_locked(int gpu) const {
  auto& slot = gpus_[gpu];
  if (!slot) slot = std::make_unique<Gpu>();
  return *slot;
}

GpuJobOutcome GpuHealth::classify(bool cuda_fault, bool unavailable, bool timed_out, bool killed, bool stuck) {
  if (stuck) return GpuJobOutcome::StuckChild;
  if (cuda_fault) return GpuJobOutcome::CudaFault;
  if (unavailable) return GpuJobOutcome::Unavailable;
  if (timed_out) return GpuJobOutcome::Timeout;
  if (killed) return GpuJobOutcome::Killed;
  return GpuJobOutcome::Clean;
}

CanaryResult GpuHealth::run_canary(int gpu) {
  // A canary that cannot run at all (no binary, no sandbox) leaves the GPU unchecked: that fails
  // too, so a broken installation stops taking GPU jobs visibly instead of silently.
  try {
    return canary_(gpu);
  } catch (const std::exception& e) {
    return {false, std::string("canary could not run: ") + e.what()};
  } catch (...) {
    return {false, "canary could not run: unknown exception"};
  }
}

void GpuHealth::quarantine_locked(Gpu& g, int gpu, const std::string& reason, bool reprobe_eligible) {
  if (!g.quarantined) ++g.quarantines;
  g.quarantined = true;
  g.reason = reason;
  g.since = std::chrono::system_clock::now();
  g.reprobe_eligible = reprobe_eligible && opts_.reprobe_interval.count() > 0;
  g.streak = 0;
  g.next_probe = opts_.clock() + opts_.reprobe_interval;
  ++g.epoch;
  g.completed = g.requested;  // outstanding checks are moot; they must not block a later clear()
  log::error("gpu.quarantined", {{"gpu", gpu}, {"reason", reason}, {"reprobe", g.reprobe_eligible}});
  done_.notify_all();
}

bool GpuHealth::after_job(int gpu, GpuJobOutcome outcome, const std::string& detail) {
  std::unique_lock lk(mu_);
  Gpu& g = gpu_locked(gpu);
  if (outcome == GpuJobOutcome::Clean) return !g.quarantined;
  if (outcome == GpuJobOutcome::StuckChild) {
    quarantine_locked(g, gpu, "child stuck in the driver after kill" + (detail.empty() ? "" : ": " + detail), false);
    return false;
  }
  if (g.quarantined) return false;
  const std::uint64_t mine = ++g.requested;
  while (!g.quarantined && g.completed < mine) {
    if (g.running) {
      done_.wait(lk);
      continue;
    }
    // Run for everyone who asked so far; later askers wait for the next run.
    g.running = true;
    const std::uint64_t covers = g.requested;
    lk.unlock();
    log::warn("gpu.canary", {{"gpu", gpu}, {"after", to_string(outcome)}, {"detail", detail}});
    const auto t0 = SteadyClock::now();
    CanaryResult res = run_canary(gpu);
    const double secs = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    lk.lock();
    g.running = false;
    g.completed = std::max(g.completed, covers);
    ++g.canaries;
    g.last_canary = res.detail;
    if (res.ok) {
      log::info("gpu.canary_passed", {{"gpu", gpu}, {"seconds", secs}, {"detail", res.detail}});
    } else {
      ++g.failures;
      if (!g.quarantined)
        quarantine_locked(g, gpu,
                          fmt::format("canary failed after {}{}: {}", to_string(outcome),
                                      detail.empty() ? "" : " (" + detail + ")", res.detail),
                          true);
    }
    done_.notify_all();
  }
  // Not usable(): another slot's check may already be pending; this call's own check passed.
  return !g.quarantined;
}

bool GpuHealth::usable(int gpu) const {
  std::lock_guard lk(mu_);
  return gpu_locked(gpu).usable();
}

bool GpuHealth::quarantined(int gpu) const {
  std::lock_guard lk(mu_);
  return gpu_locked(gpu).quarantined;
}

void GpuHealth::track(int gpu) {
  std::lock_guard lk(mu_);
  gpu_locked(gpu);
}

void GpuHealth::quarantine(int gpu, const std::string& reason) {
  std::lock_guard lk(mu_);
  quarantine_locked(gpu_locked(gpu), gpu, reason, false);
}

bool GpuHealth::clear(int gpu, std::string* previous_reason) {
  std::lock_guard lk(mu_);
  Gpu& g = gpu_locked(gpu);
  if (!g.quarantined) return false;
  if (previous_reason) *previous_reason = g.reason;
  log::warn("gpu.quarantine_cleared", {{"gpu", gpu}, {"reason", g.reason}});
  g.release();
  done_.notify_all();
  return true;
}

std::vector<int> GpuHealth::reprobe() {
  std::vector<int> released;
  if (opts_.reprobe_interval.count() <= 0) return released;
  std::unique_lock lk(mu_);
  std::vector<std::pair<int, std::uint64_t>> due;  // gpu, epoch
  const auto now = opts_.clock();
  for (auto& [gpu, g] : gpus_)
    if (g->quarantined && g->reprobe_eligible && !g->running && now >= g->next_probe) {
      g->running = true;
      due.emplace_back(gpu, g->epoch);
    }
  for (const auto& [gpu, epoch] : due) {
    lk.unlock();
    CanaryResult res = run_canary(gpu);
    lk.lock();
    Gpu& g = *gpus_.at(gpu);
    g.running = false;
    ++g.canaries;
    g.last_canary = res.detail;
    if (!res.ok) ++g.failures;
    if (g.epoch == epoch && g.quarantined) {
      g.next_probe = opts_.clock() + opts_.reprobe_interval;
      g.streak = res.ok ? g.streak + 1 : 0;
      log::info("gpu.reprobe", {{"gpu", gpu}, {"ok", res.ok}, {"streak", g.streak},
                                {"needed", opts_.reprobe_passes}, {"detail", res.detail}});
      if (g.streak >= opts_.reprobe_passes) {
        log::warn("gpu.released", {{"gpu", gpu}, {"reason", g.reason}, {"passes", g.streak}});
        g.release();
        released.push_back(gpu);
      }
    }
    done_.notify_all();
  }
  return released;
}

std::vector<GpuStatus> GpuHealth::snapshot() const {
  std::lock_guard lk(mu_);
  std::vector<GpuStatus> out;
  for (const auto& [gpu, g] : gpus_) out.push_back(g->status(gpu));
  return out;
}

nlohmann::json GpuHealth::to_json() const {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& s : snapshot())
    gpus.push_back({{"gpu", s.gpu},
                    {"state", to_string(s.state)},
                    {"reason", s.reason},
                    {"since", iso_utc(s.since)},
                    {"reprobe", s.reprobe_eligible},
                    {"reprobe_streak", s.reprobe_streak},
                    {"pending_checks", s.pending_checks},
                    {"canaries", s.canaries},
                    {"canary_failures", s.canary_failures},
                    {"quarantines", s.quarantines},
                    {"last_canary", s.last_canary}});
  return {{"gpus", gpus}};
}

std::string GpuHealth::render_metrics() const {
  const auto all = snapshot();
  if (all.empty()) return "";
  std::string o;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    o += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& s : all) o += fmt::format("{}{{gpu=\"{}\"}} {}\n", name, s.gpu, value(s));
  };
  family("kjudge_gpu_quarantined", "gauge", "1 while the GPU is quarantined (no jobs until cleared or re-probed).",
         [](const GpuStatus& s) { return s.state == GpuState::Quarantined ? 1 : 0; });
  family("kjudge_gpu_checking", "gauge", "1 while a canary runs on the GPU after a fault, timeout or kill.",
         [](const GpuStatus& s) { return s.state == GpuState::Checking ? 1 : 0; });
  family("kjudge_gpu_canary_runs_total", "counter", "Canary runs on the GPU.",
         [](const GpuStatus& s) { return s.canaries; });
  family("kjudge_gpu_canary_failures_total", "counter", "Canary runs that failed.",
         [](const GpuStatus& s) { return s.canary_failures; });
  family("kjudge_gpu_quarantines_total", "counter", "Times the GPU was quarantined.",
         [](const GpuStatus& s) { return s.quarantines; });
  return o;
}

// --- the real canary ----------------------------------------------------------------------------

kjsandbox::Policy canary_policy(const Config& cfg, const CanaryOptions& opts, int gpu,
                                const std::filesystem::path& job_dir) {
  // Inside the sandbox the assigned GPU is CUDA device 0 (the profile sets CUDA_VISIBLE_DEVICES).
  std::vector<std::string> argv = {kCanaryInSandbox, "--device", "0"};
  argv.insert(argv.end(), opts.extra_args.begin(), opts.extra_args.end());
  // run_policy adds the device profile for cfg's GPU: point that at `gpu`.
  Config c = cfg;
  c.sandbox.gpu_index = gpu;
  kjsandbox::Policy p = run_policy(c, job_dir, {}, std::move(argv), static_cast<std::uint32_t>(opts.wall.count()),
                                   64u << 10, opts.device_profile);
  std::erase_if(p.binds, [](const kjsandbox::BindMount& b) { return b.target == kRunnerInSandbox; });
  p.binds.push_back({opts.binary.string(), kCanaryInSandbox, false});
  p.kill_grace = opts.stuck_grace;  // a tree that outlives SIGKILL by this much: Report::stuck
  return p;
}

CanaryResult canary_result(const kjsandbox::Report& rep) {
  using kjsandbox::Outcome;
  // The canary's one JSON line: the last line of stdout that parses as an object.
  nlohmann::json line;
  {
    std::vector<std::string> lines;
    std::istringstream in(rep.stdout_data);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (auto it = lines.rbegin(); it != lines.rend() && !line.is_object(); ++it) {
      auto j = nlohmann::json::parse(*it, nullptr, false);
      if (j.is_object()) line = std::move(j);
    }
  }
  auto said = [&] {
    if (!line.is_object()) {
      std::string err = rep.stderr_data.substr(0, 300);
      std::erase(err, '\n');
      return err.empty() ? std::string("no report line") : "no report line; stderr: " + err;
    }
    std::string s = fmt::format("{} at {}", line.value("result", "?"), line.value("step", "?"));
    if (const std::string e = line.value("error", ""); !e.empty()) s += " (" + e + ")";
    if (const std::string d = line.value("detail", ""); !d.empty()) s += ": " + d;
    return s;
  };
  if (rep.stuck)
    return {false, fmt::format("canary ({}) did not exit after SIGKILL: stuck in the driver, GPU may be wedged",
                               kjsandbox::to_string(rep.outcome))};
  switch (rep.outcome) {
    case Outcome::Exited:
      if (rep.exit_code == kjudge::canary::kHealthy && line.is_object() && line.value("ok", false))
        return {true, fmt::format("canary passed on {} in {} ms", line.value("name", std::string("the GPU")),
                                  line.value("elapsed_ms", 0))};
      return {false, fmt::format("canary exit {}: {}", rep.exit_code, said())};
    case Outcome::WallTimeout:
      return {false, fmt::format("canary timed out after {:.1f} s: GPU may be wedged", rep.wall_seconds)};
    case Outcome::Signaled:
      return {false, fmt::format("canary killed by signal {}: {}", rep.signal, said())};
    case Outcome::SetupFailed:
      return {false, "canary sandbox could not start: " + rep.error};
    default:
      return {false, fmt::format("canary ended with {}: {}", kjsandbox::to_string(rep.outcome), said())};
  }
}

CanaryFn sandboxed_canary(const Config& cfg, CanaryOptions opts) {
  if (opts.binary.empty()) opts.binary = self_dir() / "kjudge-canary";
  if (!opts.run_sandbox) opts.run_sandbox = [](const kjsandbox::Policy& p) { return kjsandbox::run(p); };
  return [cfg, opts](int gpu) -> CanaryResult {
    if (!std::filesystem::exists(opts.binary)) return {false, "no canary binary at " + opts.binary.string()};
    auto ws = std::make_shared<Workspace>(cfg.state_dir, fmt::format("canary-gpu{}", gpu),
                                          sandbox_host_uid(cfg.sandbox.host_uid), sandbox_host_gid(cfg.sandbox.host_gid),
                                          false);
    kjsandbox::Policy policy = canary_policy(cfg, opts, gpu, ws->make_party_dir("canary"));
    // run() itself returns for a tree that outlives SIGKILL (Report::stuck, after kill_grace). A
    // run() that hangs anywhere else is bounded here, a little later, on a thread of its own; that
    // thread (and the workspace it holds) is then left behind: nothing reclaims a process in D state.
    auto result = std::make_shared<std::promise<kjsandbox::Report>>();
    std::future<kjsandbox::Report> done = result->get_future();
    std::thread([ws, policy = std::move(policy), run = opts.run_sandbox, result]() mutable {
      // Drop this thread's hold on the workspace before answering: the caller then removes the
      // job dir itself, instead of this thread racing it (or the caller's cleanup) afterwards.
      try {
        kjsandbox::Report rep = run(policy);
        ws.reset();
        result->set_value(std::move(rep));
      } catch (...) {
        ws.reset();
        result->set_exception(std::current_exception());
      }
    }).detach();
    const auto bound = opts.wall + opts.stuck_grace + std::chrono::milliseconds(2000);
    if (done.wait_for(bound) != std::future_status::ready)
      return {false, fmt::format("canary sandbox gave no report within {} ms: stuck in the driver, GPU may be wedged",
                                 bound.count())};
    try {
      return canary_result(done.get());
    } catch (const std::exception& e) {
      return {false, std::string("canary sandbox failed: ") + e.what()};
    }
  };
}

}  // namespace kj
