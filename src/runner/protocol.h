// The RUN protocol every backend follows (design §5, steps 4 and 7 as far as one process can):
//  1. one correctness call per input set (request.sets; or the legacy input_dir/output_dir), each on
//     freshly loaded inputs and poisoned outputs; outputs written; IN tensors read back and digested;
//  2. `warmup` untimed calls, then timed calls rotating through request.timing_sets (distinct values,
//     so memoizing pays nothing); before each: inputs re-loaded, outputs re-poisoned, caches flushed
//     (outside the timed region); after each: outputs fetched and digested, audited calls' outputs
//     written in full;
//  3. adaptive stop: at least min_trials, then until the 95% CI of the median is within
//     target_rel_ci, max `trials`, or budget_ms of host time;
//  4. one byte per loop event on clock_path ('S' start, 'T' per timed call, 'E' end), sent as
//     datagrams the kernel stamps (runner/clock_marks.h).
#pragma once

#include <filesystem>
#include <vector>

#include "kjudge/v1/runner.pb.h"
#include "runner/args.h"

namespace kjudge::runner {

struct CallTime {
  double ms = 0;       // by the backend's method (events, profiling, steady_clock)
  double wall_ms = 0;  // host wall from launch to device-wide completion
};

// One backend's way to call the kernel. `args` handed to the constructor are the working set: the
// buffers (or device mirrors) the kernel sees on every call.
class Launcher {
 public:
  virtual ~Launcher() = default;
  // One complete call (returns when the kernel and everything it started on the device finished).
  virtual CallTime call() = 0;
  // Make the kernel's buffers hold `set`'s IN/INOUT values and poisoned OUT tensors.
  virtual void load(const std::vector<HostArg>& set) = 0;
  // Make the working host tensors hold what the kernel's buffers hold now (all roles).
  virtual void fetch_outputs() = 0;
  virtual void fetch_inputs() = 0;
  // Outside the timed region, before each timed call: flush caches, reset persisting state.
  virtual void before_timed_call() {}
  // Bandwidth the flush achieved (GB/s, 0 if none) and flags noticed, for the report.
  virtual double flush_bandwidth_gbps() const { return 0; }
  virtual std::vector<std::string> flags() const { return {}; }
};

// Threads of this process now (/proc/self/task entries); -1 if unreadable.
int count_threads();

// Copy IN/INOUT values of `src` into `dst` and poison dst's OUT tensors (same shapes).
void copy_set(const std::vector<HostArg>& src, std::vector<HostArg>& dst);

void run_protocol(const kjudge::v1::RunnerRequest& request, std::vector<HostArg>& args,
                  Launcher& launcher, kjudge::v1::RunnerReport& report);

// Loads the args of one input set: `input_dir` replaces the request's.
std::vector<HostArg> load_set_args(const kjudge::v1::RunnerRequest& request, const std::string& input_dir);

// The working args: the first set's inputs (or the legacy input_dir).
std::vector<HostArg> load_working_args(const kjudge::v1::RunnerRequest& request);

// The request's sets (legacy input_dir/output_dir as one set when `sets` is empty).
std::vector<kjudge::v1::RunnerSet> request_sets(const kjudge::v1::RunnerRequest& request);

}  // namespace kjudge::runner
