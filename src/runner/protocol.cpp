#include "runner/protocol.h"

#include <filesystem>

#include "runner/error.h"

namespace kjudge::runner {

void run_protocol(const kjudge::v1::RunnerRequest& request, std::vector<HostArg>& args,
                  Launcher& launcher, kjudge::v1::RunnerReport& report) {
  if (request.output_dir().empty()) throw RunnerError("RUN needs output_dir");
  const std::filesystem::path output_dir = request.output_dir();

  launcher.call();  // the correctness call, on the inputs exactly as loaded
  launcher.fetch_outputs();
  for (const auto& arg : args) {
    if (const auto* t = std::get_if<HostTensor>(&arg); t && t->is_output()) {
      write_tensor(*t, output_dir);
    }
  }

  if (request.trials() == 0) return;
  for (unsigned i = 0; i < request.warmup(); ++i) {
    launcher.restore_inouts();
    launcher.call();
  }
  for (unsigned i = 0; i < request.trials(); ++i) {
    launcher.restore_inouts();
    report.add_trial_ms(launcher.call());
  }
}

}  // namespace kjudge::runner
