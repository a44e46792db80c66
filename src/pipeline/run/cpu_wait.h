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
};

// nullopt when the process is gone or /proc does not say.
std::optional<CpuSample> sample_cpu(pid_t pid);

// The main thread's wait for a CPU between two samples that its own job did not cause, in ms:
// the wait less the CPU time the job's other tasks took meanwhile (a process that keeps its own
// CPU busy earns nothing). 0 without the job's CPU time in both samples.
double host_cpu_wait_ms(const CpuSample& from, const CpuSample& to);

}  // namespace kj
