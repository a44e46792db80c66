// Which trusted worker serves a job: one per tenant and GPU (or the CPU) on this node, so a tenant's
// reference code never shares a process (or a CUDA context) with another tenant's data.
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "pipeline/worker/trusted_worker.h"

namespace kj {

// The tenant's worker, started (or replaced, when it exited) as needed.
std::shared_ptr<TrustedWorker> trusted_worker(const Config& cfg, const std::string& tenant, bool gpu);

// Kills every worker and waits for them (kjudged's shutdown; also at process exit).
void stop_trusted_workers();

}  // namespace kj
