// What a judging stage gets from its caller (kjudged's worker or `kjudge eval`) besides the job:
// its own header, so the stages need not include the front door (judge.h) that calls them.
#pragma once

#include <string>

#include "common/config.h"
#include "pipeline/run/sandbox_watch.h"

namespace kj {

class BuildStore;  // pipeline/build/store.h (the build layer, above this one)

struct JudgeContext {
  const Config& config;
  std::string worker;  // "<node>/<slot>" for the Result
  // kjudged: the job's cancel fd in, GPU incidents of its sandboxes out (pipeline/run/sandbox_watch.h).
  SandboxWatch* watch = nullptr;
  // kjudged with [build] shared: the cluster's shared KernelBench builds (pipeline/build/store.h).
  BuildStore* builds = nullptr;
  // `kjudge eval`: judge on the device in turns with other evals of this node (device_turn_file).
  bool device_turns = false;
  // kjudged: the job's delivery (2 and up: a retry, which a KernelBench job runs with the
  // device's memory to itself, pipeline/kernelbench/pipeline.cpp).
  unsigned delivery = 1;
};

}  // namespace kj
