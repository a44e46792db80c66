// The shared build store on the cluster's Redis (docs/operator-guide.md, *Build nodes*):
//   kj:{pN}:art:<key>       the artifact (buildfarm/artifact.h), PX artifact_ttl, at most artifact_max_bytes;
//                           with [build] artifact_dir, only a marker "kjref1 <sha256> <size>" and the
//                           artifact is a file of the shared mount (buildfarm/file_artifact_store.h)
//   kj:{pN}:blease:<key>    who builds it now: SET NX PX by kj_build_lease, renewed every lease/3
//   kj:{pN}:building:<t>    the tenant's live build leases (its cluster cap bounds them on build nodes)
//   kj:{pN}:builders        live build nodes (member = node, score = expiry ms), from their heartbeat
// Thread-safe: calls borrow a connection from a small pool.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buildfarm/file_artifact_store.h"
#include "common/config.h"
#include "kjqueue/queue.h"
#include "pipeline/build/store.h"

namespace kj::buildfarm {

class RedisBuildStore : public BuildStore {
 public:
  enum class Role { Judge, Build };
  RedisBuildStore(const Config& cfg, Role role);

  BuildClaim claim(const ClaimRequest& req) override;
  void publish(const SharedBuild& build) override;
  void release(const std::string& key) override;

  // Pushes the expiry of every lease this process holds (its owner's loop calls this every lease/3).
  void renew_held();
  // An artifact or a lease exists for the key: a build node's cheap look before it builds.
  bool taken(const std::string& key);
  // Build nodes: say this node is alive until now + ttl (heartbeat), or gone.
  void announce_builder(std::chrono::milliseconds ttl);
  void withdraw_builder();
  std::size_t leases_held();
  // Prometheus counters of this process's use of the store (kjudged's /metrics).
  std::string render_metrics() const;

 private:
  struct Pooled;
  Pooled borrow();
  std::optional<SharedBuild> fetch(kjqueue::Queue& q, const std::string& key);
  std::optional<std::string> fetch_value(kjqueue::Queue& q, const std::string& art, std::string& why);
  void store_value(kjqueue::Queue& q, const std::string& key, const std::string& value);
  std::string acquire(kjqueue::Queue& q, const std::string& key, const std::string& tenant);
  bool reserve_local(kjqueue::Queue& q, bool may_defer);
  void unreserve_local();
  bool builders_alive(kjqueue::Queue& q);
  void drop_held(const std::string& key);

  kjqueue::Endpoint endpoint_;
  int partition_;
  BuildConfig build_;
  std::string node_, owner_;
  Role role_;
  std::optional<FileArtifactStore> files_;  // [build] artifact_dir set
  int local_max_;
  std::mutex mu_;
  std::vector<std::unique_ptr<kjqueue::Queue>> pool_;
  std::map<std::string, std::string> held_;  // key -> tenant
  std::atomic<int> local_builds_{0};
  // counters for render_metrics
  std::atomic<std::uint64_t> fetched_{0}, rejected_{0}, leased_{0}, published_{0}, publish_failed_{0}, gave_up_{0},
      file_bytes_read_{0}, file_bytes_written_{0};
  std::atomic<std::uint64_t> wait_ms_{0};
};

}  // namespace kj::buildfarm
