// A build node's work on one KernelBench-format job: the static policy and the build (stages 1-2)
// alone, in a workspace of its own, left in the shared build store for the node that judges it.
#pragma once

#include <string>

#include "common/config.h"
#include "kjudge/v1/job.pb.h"
#include "pipeline/build/store.h"

namespace kj {

struct PrebuildOutcome {
  std::string verdict;  // "OK" (built), or the build's failure verdict (COMPILE_ERROR, ...)
  std::string message;
  double seconds = 0;
  double cpu_seconds = 0;    // the build's whole tree (build.cpu_seconds)
  double light_headers = 0;  // extensions compiled with the light torch headers (build.light_headers)
};

// The caller holds the key's lease (kernelbench_build_key); it is published or released here.
// Never throws for the job's faults; throws std::exception for the node's own (the caller releases).
PrebuildOutcome prebuild_kernelbench(const kjudge::v1::Job& job, const Config& cfg, BuildStore& store);

}  // namespace kj
