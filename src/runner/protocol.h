// The RUN protocol every backend follows (design §5, steps 4 and 7 as far as one process can):
// one correctness call on fresh inputs -> outputs written; then `warmup` untimed calls and `trials`
// timed calls, each preceded (outside the timed region) by restoring INOUT tensors.
#pragma once

#include <vector>

#include "kjudge/v1/runner.pb.h"
#include "runner/args.h"

namespace kjudge::runner {

// One backend's way to call the kernel.
class Launcher {
 public:
  virtual ~Launcher() = default;
  // One complete call (returns when the kernel has finished); its time in ms by the backend's method.
  virtual double call() = 0;
  // Make the host tensors hold what the kernel wrote (device backends copy back).
  virtual void fetch_outputs() = 0;
  // Reset INOUT tensors to their pristine inputs where the kernel reads them.
  virtual void restore_inouts() = 0;
};

void run_protocol(const kjudge::v1::RunnerRequest& request, std::vector<HostArg>& args,
                  Launcher& launcher, kjudge::v1::RunnerReport& report);

}  // namespace kjudge::runner
