// GPU health (design §7): after a job that used a GPU ends in a device fault, a timeout or a kill,
// a canary kernel checks the device before it takes more work; a GPU that fails the canary, or
// holds a child stuck in the driver, is quarantined (no more jobs) and reported. Quarantine is
// sticky until an operator clears it, unless re-probing is configured (GpuHealthOptions).
//
// States per GPU (keyed by its device minor, the daemon's gpu index):
//   Healthy ──fault/timeout/kill──▶ Checking ──canary ok──▶ Healthy
//                                       └──canary fails──▶ Quarantined
//   any ──stuck child / quarantine()──▶ Quarantined ──clear() (operator)──▶ Healthy
//   Quarantined by a failed canary ──reprobe(): N passes in a row, one per interval──▶ Healthy
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "kjsandbox/policy.h"
#include "kjsandbox/report.h"

namespace kj {

// What a finished job did to the GPU it used. When several apply, classify() picks the worst.
enum class GpuJobOutcome {
  Clean,       // every run on the GPU ended by itself and the verdict is not CUDA_FAULT
  Killed,      // we killed a run that held the GPU (output limit, cancel, memory, seccomp) or it died by a signal
  Timeout,     // a run that held the GPU hit its wall limit
  CudaFault,   // verdict CUDA_FAULT (illegal address, device-side assert, launch failure)
  Unavailable, // a run's GPU could not be set up (no context, no memory for one): the node's fault
  StuckChild,  // a run's process tree did not die after SIGKILL: stuck in the driver
};
const char* to_string(GpuJobOutcome o);

struct CanaryResult {
  bool ok = false;
  std::string detail;  // one line: what failed (or what passed), for logs and the admin view
};
// Runs a canary on `gpu` and blocks until it has an answer. Exceptions count as a failed canary.
using CanaryFn = std::function<CanaryResult(int gpu)>;

struct GpuHealthOptions {
  // 0 = quarantine is sticky until clear(). Otherwise a GPU quarantined by a failed canary is
  // probed again by reprobe() once per interval and released after `reprobe_passes` passes in a
  // row (a failure starts the count again). Stuck children and operator quarantines never are:
  // a process stuck in the driver may still hold the GPU, and an operator's call is theirs to undo.
  std::chrono::milliseconds reprobe_interval{0};
  unsigned reprobe_passes = 3;
  std::function<std::chrono::steady_clock::time_point()> clock;  // tests; default steady_clock::now
};

enum class GpuState { Healthy, Checking, Quarantined };
const char* to_string(GpuState s);

struct GpuStatus {
  int gpu = 0;
  GpuState state = GpuState::Healthy;
  std::string reason;                            // Quarantined: why (the canary's detail, the stuck run, ...)
  std::chrono::system_clock::time_point since{};  // Quarantined: when
  bool reprobe_eligible = false;                 // reprobe() may release it
  unsigned reprobe_streak = 0;                   // consecutive passes so far
  std::uint64_t pending_checks = 0;              // jobs waiting for a canary to answer for them
  std::uint64_t canaries = 0, canary_failures = 0, quarantines = 0;
  std::string last_canary;  // the last canary's detail, pass or fail
};

class GpuHealth {
 public:
  explicit GpuHealth(CanaryFn canary, GpuHealthOptions opts = {});
  ~GpuHealth();
  GpuHealth(const GpuHealth&) = delete;
  GpuHealth& operator=(const GpuHealth&) = delete;

  // The daemon calls this after every job that used `gpu`, on the job's slot thread. Clean: no
  // canary. Killed, Timeout, CudaFault: runs the canary now (blocking, seconds); a job that ends
  // while a canary runs for the same GPU waits for it and then for one more run that starts
  // after its own fault (concurrent faults share runs). StuckChild: quarantined without a canary.
  // Returns false when the GPU is (now) quarantined, true when the check this call needed passed
  // (or none was needed). Before starting a job on the GPU, ask usable(): another slot's check
  // may be running.
  bool after_job(int gpu, GpuJobOutcome outcome, const std::string& detail = {});

  // May a job start on `gpu` now? False while quarantined or while a canary runs on it.
  bool usable(int gpu) const;
  bool quarantined(int gpu) const;
  // Reports `gpu` (healthy) from now on, before any job has run on it.
  void track(int gpu);

  // Quarantine by hand (an operator, or the daemon for a reason of its own). Never re-probed.
  void quarantine(int gpu, const std::string& reason);
  // Operator: back to Healthy. Returns false (and changes nothing) if it was not quarantined;
  // `previous_reason` receives the reason it had.
  bool clear(int gpu, std::string* previous_reason = nullptr);

  // Probes each re-probe-eligible quarantined GPU whose interval has passed (one canary each;
  // no-op when reprobe_interval is 0). Blocking: call it from a worker thread every few seconds,
  // never from the event loop. Returns the GPUs released.
  std::vector<int> reprobe();

  std::vector<GpuStatus> snapshot() const;  // every GPU seen so far, by index
  nlohmann::json to_json() const;           // for an admin command / status reply
  std::string render_metrics() const;       // Prometheus text: kjudge_gpu_* gauges and counters

  // Worst first: stuck > CUDA fault > timeout > kill > clean.
  static GpuJobOutcome classify(bool cuda_fault, bool unavailable, bool timed_out, bool killed, bool stuck);

 private:
  struct Gpu;
  Gpu& gpu_locked(int gpu) const;  // mu_ held; creates a Healthy entry on first sight
  void quarantine_locked(Gpu& g, int gpu, const std::string& reason, bool reprobe_eligible);
  CanaryResult run_canary(int gpu);  // mu_ not held

  CanaryFn canary_;
  GpuHealthOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable done_;  // a canary finished, or a GPU was quarantined or cleared
  mutable std::map<int, std::unique_ptr<Gpu>> gpus_;
};

// The real canary: kjudge-canary in a run-slot sandbox (kj::run_policy, no job inputs) with the
// device profile for the given GPU, under a short wall limit.
struct CanaryOptions {
  std::filesystem::path binary;            // empty: kjudge-canary beside the running executable
  std::string device_profile = "nvidia-cuda";
  std::chrono::milliseconds wall{20'000};  // the canary's own watchdog fires at 15 s
  // No report this long after the wall limit: the canary's tree is stuck in the driver; the
  // sandbox thread is left behind and the canary fails.
  std::chrono::milliseconds stuck_grace{10'000};
  std::vector<std::string> extra_args;     // appended to the canary's command line (tests)
  // Tests: replaces kjsandbox::run.
  std::function<kjsandbox::Report(const kjsandbox::Policy&)> run_sandbox;
};
inline constexpr const char* kCanaryInSandbox = "/opt/kjudge/bin/kjudge-canary";

CanaryFn sandboxed_canary(const Config& cfg, CanaryOptions opts = {});
// The sandbox policy sandboxed_canary() runs (exposed for tests and `kjudge doctor`-style checks).
kjsandbox::Policy canary_policy(const Config& cfg, const CanaryOptions& opts, int gpu,
                                const std::filesystem::path& job_dir);
// kjudge-canary's sandbox report → pass/fail with a one-line reason.
CanaryResult canary_result(const kjsandbox::Report& rep);

}  // namespace kj
