// The verification engine's checks after a correct run (design §5 steps 4 and 7): input tampering,
// threads left behind, audited timed calls, output-digest consistency, the daemon's clock against
// the in-process figures, hidden device work, and the roofline floor. Each returns a Finding (the
// verdict it argues for; a CHEAT's class goes on the result); pipeline/verdict/verdict.cpp's final_verdict
// decides.
// docs/verdicts-and-rewards.md lists them and what a forger can and cannot do.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kjudge/v1/job.pb.h"
#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/runner.pb.h"
#include "pipeline/checks/compare.h"
#include "pipeline/job/inputs.h"
#include "pipeline/run/result_flags.h"
#include "pipeline/run/steps.h"
#include "pipeline/timing/clock_reader.h"
#include "pipeline/verdict/verdict.h"

namespace kj {

// How far the reported call times may run past the daemon's clock before the report counts as
// forged: factor x span + slack_ms. Each pipeline chooses its own (its loop, its clock reader).
struct ForgedReportSlack {
  double factor;
  double slack_ms;
};

// The daemon's own clock over a timed loop against the call times the candidate's process
// reported, for both pipelines. span_ms: the loop on the daemon's clock (nullopt: its marks are
// missing or forged, SUSPICIOUS). outside_bound_ms: the most the loop may take on that clock
// (time spent outside the measured region past it is SUSPICIOUS; nullopt: not checked), to which
// cpu_wait_ms adds the loop's wait for a CPU the host gave to others (cpu_wait.h). A report
// beyond `forged` claims more time than passed: SUSPICIOUS (forged). Sets the performance fields
// it compares.
struct ClockCheck {
  std::optional<double> span_ms;
  double inprocess_sum_ms = 0;
  std::optional<double> outside_bound_ms;
  ForgedReportSlack forged;
  double cpu_wait_ms = 0;
};
std::optional<Finding> check_daemon_clock(const ClockCheck& check, kjudge::v1::Result& r);

// set index -> arg index -> digest64 of the bytes the daemon wrote.
using InputDigests = std::map<unsigned, std::map<int, std::uint64_t>>;
InputDigests digest_input_sets(const kjudge::v1::NativeTask& task, const std::vector<InputSet>& sets);

// Compares every OUT/INOUT tensor of one set (files arg<i>.bin in the two dirs).
kjudge::v1::CorrectnessSet compare_set(const kjudge::v1::NativeTask& task, const std::string& name,
                                       const std::filesystem::path& expected_dir,
                                       const std::filesystem::path& actual_dir, const Tolerance* override_tol);

// The digest the runner reports per timed call, recomputed from output files in `dir`.
std::uint64_t outputs_digest_of_dir(const kjudge::v1::NativeTask& task, const std::filesystem::path& dir);

// `count` distinct call indices in [0, below), from the OS entropy pool.
std::vector<unsigned> pick_audit_calls(unsigned below, unsigned count);


// Device work outside the events (private streams), CHEAT_STREAM: the host wall launch..device-wide
// sync against the event time (medians per call) of a CUDA loop, past what the loop's wait for a
// CPU (cpu_wait.h) can explain.
std::optional<Finding> check_side_streams(const kjudge::v1::RunnerReport& rep, double med_ev, double med_wall,
                                         double loop_cpu_wait_ms, kjudge::v1::Result& r);

// Harness time per timed call outside the timed region, from a clean (reference) run:
// (daemon-clock span of the loop - in-process sum) / calls. 0 when the marks are unusable.
double harness_overhead_per_call(const kjudge::v1::RunnerReport& report, const std::vector<ClockMark>& marks);

// Bytes a call must move: task.min_bytes_moved, else every IN/OUT tensor once and INOUT twice.
std::uint64_t bytes_moved(const kjudge::v1::NativeTask& task);

struct EngineFacts {
  const kjudge::v1::NativeTask* task = nullptr;
  const std::vector<InputSet>* sets = nullptr;
  const InputDigests* expected_inputs = nullptr;
  std::filesystem::path ref_dir, cand_dir;            // out<k>/ and (candidate) audit/<call>/
  const kjudge::v1::RunnerReport* report = nullptr;    // the candidate's
  const std::vector<ClockMark>* marks = nullptr;       // the daemon's clock on the candidate's loop
  const kjudge::v1::Performance* baseline = nullptr;   // clean-process figures (overhead, bandwidth)
  std::vector<unsigned> audit_calls;
  const Tolerance* override_tol = nullptr;
  bool timed = false;
};

// nullopt: nothing found. Otherwise the first Integrity finding; sets result.cheat_class, legality
// flags and the performance cross-check fields along the way.
std::optional<Finding> check_integrity(const EngineFacts& facts, kjudge::v1::Result& result);

}  // namespace kj
