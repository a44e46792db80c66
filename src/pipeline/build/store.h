// A store of finished KernelBench builds shared by the nodes of a cluster (src/buildfarm/ has the
// Redis one). The pipeline sees only this interface: before compiling it claims the build's content
// key and gets either the artifact another node made, or the key's lease (then it builds and
// publishes), or it waits while a live builder holds the lease. `kjudge eval` has no store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kj {

// One file of a build: "<extension key>/<file name>" and its bytes.
struct BuildFile {
  std::string path;
  std::string bytes;
};

// What a build leaves for other nodes: a successful build's memo entry and extension binaries, or
// the candidate's build failure (never ours: INFRA_ERROR, CANCELLED and EXPIRED are not shared).
struct SharedBuild {
  std::string key;                                 // the content key it was built for
  std::string builder;                             // node that built it
  nlohmann::json memo = nlohmann::json::object();  // success: static_policy, extensions, candidate_py, torch_file
  std::vector<BuildFile> files;
  bool failed = false;
  int verdict = 0;             // kjudge.v1.Verdict of the failure
  std::string message, detail;
  std::string partial_result;  // serialized kjudge.v1.Result: the build stage's compile report, flags, stage
};

struct BuildClaim {
  enum Kind {
    Artifact,   // `artifact` holds the shared build: use it
    Leased,     // the caller holds the lease: build, then publish() or release()
    Busy,       // someone else builds it and the caller may not wait longer: build unshared, or skip
    Unshared,   // the store cannot be used now (Redis down, ...): build without it
    Cancelled,  // the job was cancelled while waiting
    Expired,    // the job's deadline passed while waiting
  } kind = Unshared;
  std::optional<SharedBuild> artifact;
  double waited_s = 0;
};

struct ClaimRequest {
  std::string key, tenant;
  // Wait for another builder's artifact until then (a build node passes now: it never waits).
  std::chrono::steady_clock::time_point wait_until;
  std::optional<std::chrono::system_clock::time_point> deadline;  // the job's
  int cancel_fd = -1;                                             // readable once the job is cancelled
  // Build nodes make builds of this kind (KernelBench). False for native builds, which only judging
  // nodes make: such a claim never leaves its build to a build node past local_max.
  bool build_nodes_build_it = true;
};

class BuildStore {
 public:
  virtual ~BuildStore() = default;
  virtual BuildClaim claim(const ClaimRequest& req) = 0;
  // Stores the artifact (if within the size bound) and releases the caller's lease on the key.
  virtual void publish(const SharedBuild& build) = 0;
  // Gives the lease back without an artifact (a build that failed on our side, or was cancelled).
  virtual void release(const std::string& key) = 0;
};

}  // namespace kj
