// The partition's shared housekeeping, run by one elected judging node instead of all of them
// (docs/capacity-plan.md step 3): moving due retries back onto their streams (kj_promote), trimming
// the job streams (kj_trim), finding tenants whose entries sit idle past the lease (the reaper's
// scan: kj:{pN}:reapable, read by every node's reaper), dropping expired architectures from
// kj:{pN}:archs and old files from the artifact store ([build] artifact_dir).
//
// Election: kj_housekeeper's lease (SET NX PX [queue] housekeeper_lease_ms, renewed every third of
// it by its holder); a new holder gets a new fencing token, and kj_promote / kj_trim refuse a token
// that is not the current one, so a holder that was paused or cut off past its lease cannot act
// after another took over. Its own thread and Redis connection; stop() releases the lease.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/config.h"
#include "kjqueue/queue.h"

namespace kj {

class Housekeeper {
 public:
  // on_trim: entries kj_trim removed (the daemon's metric).
  Housekeeper(const Config& cfg, std::function<void(std::size_t)> on_trim);
  ~Housekeeper();
  void start();
  void stop();  // joins, releases the lease if held
  bool leading() const { return token_ != 0; }
  std::uint64_t token() const { return token_; }
  const std::string& owner() const { return owner_; }

 private:
  void loop();
  bool hold(kjqueue::Queue& q);  // -> leading after the call
  void work(kjqueue::Queue& q);
  void scan_reapable(kjqueue::Queue& q);
  void prune_archs(kjqueue::Queue& q);

  Config cfg_;
  std::function<void(std::size_t)> on_trim_;
  std::string owner_;  // <node>/<pid>/<random>: a restarted node is a new holder
  std::atomic<std::uint64_t> token_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  using Clock = std::chrono::steady_clock;
  Clock::time_point next_promote_{}, next_trim_{}, next_reap_{}, next_archs_{}, next_prune_{};
};

}  // namespace kj
