#include "pipeline/run/cpu_wait.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "kjsandbox/policy.h"

namespace kj {

std::optional<CpuSample> sample_cpu(pid_t pid) {
  // /proc/<pid>/schedstat: the thread-group leader's ns on a CPU, ns waiting on a run queue, slices
  std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
  CpuSample s;
  if (!(in >> s.exec_ns >> s.wait_ns)) return std::nullopt;
  s.job_cpu_ns = kjsandbox::job_cpu_ns(pid);
  return s;
}

double host_cpu_wait_ms(const CpuSample& from, const CpuSample& to) {
  if (!from.job_cpu_ns || !to.job_cpu_ns || to.wait_ns < from.wait_ns) return 0;
  const auto delta = [](std::uint64_t a, std::uint64_t b) { return b > a ? static_cast<double>(b - a) : 0.0; };
  const double others = std::max(0.0, delta(*from.job_cpu_ns, *to.job_cpu_ns) - delta(from.exec_ns, to.exec_ns));
  const double waited = delta(from.wait_ns, to.wait_ns) + static_cast<double>(from.read_late_ns);
  return std::max(0.0, waited - others) / 1e6;
}

}  // namespace kj
