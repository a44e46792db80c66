// What the host's scheduler did to a sandboxed process during its timed loop, read by the daemon
// (the process cannot write these figures): its main thread's time on a CPU and waiting for one
// (/proc/<pid>/schedstat), and the CPU time of its whole job cgroup. A loop stretched because the
// host gave its CPU to someone else was not spending that time outside the measured region.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace kj {

struct CpuSample {
  std::uint64_t exec_ns = 0;  // the main thread on a CPU
  std::uint64_t wait_ns = 0;  // the main thread runnable, waiting for a CPU
  std::optional<std::uint64_t> job_cpu_ns;  // every task of the job's cgroup on a CPU
  std::uint64_t read_late_ns = 0;  // how long after its mark was sent the sample was taken
};

// nullopt when the process is gone or /proc does not say.
std::optional<CpuSample> sample_cpu(pid_t pid);

// The main thread's wait for a CPU between two marks that its own job did not cause, in ms: the
// wait between the samples, and all of the time between the first mark and its sample (a reader
// on a loaded host takes it late: the process may have waited all along), less the CPU time the
// job's other tasks took meanwhile (a process that keeps its own CPU busy earns nothing). A late
// second sample only adds wait after the loop, which is generous, never harsh. 0 without the
// job's CPU time in both samples.
double host_cpu_wait_ms(const CpuSample& from, const CpuSample& to);

}  // namespace kj
