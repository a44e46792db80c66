// The node's build sandboxes (the KernelBench build role) are bounded by its CPUs and memory, not by
// its job slots: a job's build waits here, first come first served, for one of [build] concurrency
// places. With more job slots than build places, the jobs whose builds are done run their GPU
// stages while other builds compile, and the backlog waits in this queue instead of
// oversubscribing the CPUs (which stretches every build and leaves the GPU idle).
#pragma once

#include <chrono>
#include <cstdint>

#include "common/config.h"

namespace kj {

// [build] concurrency, else min(CPUs / CPUs per build, memory / compile_memory_bytes), at least 1.
// A build counts [sandbox] compile_cpus CPUs, else 2 (load_inline's ninja runs two compiles).
unsigned build_concurrency(const Config& cfg);

// The same sizing from given figures (tests).
unsigned build_concurrency_for(unsigned cpus, std::uint64_t memory_bytes, const Config& cfg);

// One build place, held while alive. Places are handed out in arrival order; the count is fixed
// at the first build (a restart changes it, as for [daemon] workers).
class BuildSlot {
 public:
  // Waits for a place; cancel_fd (-1: none) readable ends the wait without one (cancelled() true).
  BuildSlot(const Config& cfg, int cancel_fd);
  ~BuildSlot();
  BuildSlot(const BuildSlot&) = delete;
  BuildSlot& operator=(const BuildSlot&) = delete;
  bool cancelled() const { return !held_; }
  double seconds_waited() const { return waited_s_; }

 private:
  bool held_ = false;
  double waited_s_ = 0;
};

}  // namespace kj
