// Resource limits: planned from the policy in the parent, applied by the command child.
#include <sys/resource.h>

#include <cerrno>

#include "child_plan.h"
#include "sys.h"

namespace kjsandbox {

std::vector<RlimitOp> plan_rlimits(const Rlimits& limits) {
  std::vector<RlimitOp> ops;
  auto add = [&](int resource, const char* name, std::uint64_t soft, std::uint64_t hard) {
    RlimitOp op;
    op.resource = resource;
    op.name = name;
    op.limit.rlim_cur = static_cast<rlim_t>(soft);
    op.limit.rlim_max = static_cast<rlim_t>(hard);
    ops.push_back(op);
  };
  add(RLIMIT_CORE, "RLIMIT_CORE", limits.core_bytes, limits.core_bytes);
  add(RLIMIT_NOFILE, "RLIMIT_NOFILE", limits.open_files, limits.open_files);
  add(RLIMIT_FSIZE, "RLIMIT_FSIZE", limits.file_size_bytes, limits.file_size_bytes);
  add(RLIMIT_STACK, "RLIMIT_STACK", limits.stack_bytes, limits.stack_bytes);
  if (limits.address_space_bytes)
    add(RLIMIT_AS, "RLIMIT_AS", *limits.address_space_bytes, *limits.address_space_bytes);
  // One second of grace between SIGXCPU (soft) and SIGKILL (hard).
  if (limits.cpu_seconds) add(RLIMIT_CPU, "RLIMIT_CPU", *limits.cpu_seconds, *limits.cpu_seconds + 1);
  if (limits.processes) add(RLIMIT_NPROC, "RLIMIT_NPROC", *limits.processes, *limits.processes);
  return ops;
}

// Child side. Limits can only be lowered here (raising a hard limit needs CAP_SYS_RESOURCE in
// the initial user namespace), so each value is clamped to the current hard limit.
bool apply_rlimits(const ChildPlan& plan, int* failed_index) {
  for (std::size_t i = 0; i < plan.rlimits.size(); ++i) {
    const RlimitOp& op = plan.rlimits[i];
    struct rlimit cur{};
    struct rlimit want = op.limit;
    if (sys::prlimit(op.resource, nullptr, &cur) == 0) {
      if (want.rlim_max > cur.rlim_max) want.rlim_max = cur.rlim_max;
      if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
    }
    if (sys::prlimit(op.resource, &want, nullptr) != 0) {
      *failed_index = static_cast<int>(i);
      return false;
    }
  }
  return true;
}

}  // namespace kjsandbox
