// One piece of work per key at a time in this process (single flight): the first caller for a key
// leads and does the work; callers arriving while it runs follow, wait for it to land and take its
// outcome instead of doing the same work again. KernelBench builds use it so that two identical
// submissions, or strict and compat of one source, judged by two slots at once compile once
// (kernelbench/build.cpp); across nodes the shared build store's lease does the same job.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace kj {

template <class T>
class SingleFlight {
  struct State {
    bool landed = false;
    std::optional<T> outcome;
  };

 public:
  // A caller's place in its key's flight. A leader that goes out of scope without land() (an
  // exception) lands with no outcome: its followers then take the work on themselves.
  class Seat {
   public:
    bool leader() const { return leader_; }

    // Leader: hand the outcome (nullopt: nothing a follower may reuse) to every follower.
    void land(std::optional<T> outcome) {
      if (!leader_ || !state_) return;
      std::lock_guard lk(owner_->mu_);
      state_->landed = true;
      state_->outcome = std::move(outcome);
      owner_->flights_.erase(key_);
      state_.reset();
      owner_->cv_.notify_all();
    }

    enum class Wait { Landed, Cancelled, TimedOut };
    // Follower: until the leader lands, the cancel fd (-1: none) is readable, or `until` passes.
    Wait wait(int cancel_fd, std::chrono::steady_clock::time_point until) {
      constexpr auto kPoll = std::chrono::milliseconds(200);  // how soon a cancel is seen
      std::unique_lock lk(owner_->mu_);
      while (!state_->landed) {
        if (std::chrono::steady_clock::now() >= until) return Wait::TimedOut;
        if (cancel_fd >= 0 && readable(cancel_fd)) return Wait::Cancelled;
        owner_->cv_.wait_until(lk, std::min(until, std::chrono::steady_clock::now() + kPoll));
      }
      return Wait::Landed;
    }

    // Follower, after Landed: the leader's outcome.
    const std::optional<T>& outcome() const { return state_->outcome; }

    Seat(Seat&& o) noexcept
        : owner_(o.owner_), key_(std::move(o.key_)), state_(std::move(o.state_)), leader_(o.leader_) {}
    Seat(const Seat&) = delete;
    Seat& operator=(const Seat&) = delete;
    Seat& operator=(Seat&&) = delete;
    ~Seat() { land(std::nullopt); }

   private:
    friend class SingleFlight;
    Seat(SingleFlight* owner, std::string key, std::shared_ptr<State> state, bool leader)
        : owner_(owner), key_(std::move(key)), state_(std::move(state)), leader_(leader) {}
    static bool readable(int fd) {
      pollfd p{fd, POLLIN, 0};
      return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
    }
    SingleFlight* owner_;
    std::string key_;
    std::shared_ptr<State> state_;
    bool leader_;
  };

  // Leads the key's flight when none is in the air, else follows the one that is.
  Seat join(const std::string& key) {
    std::lock_guard lk(mu_);
    auto [it, fresh] = flights_.try_emplace(key, nullptr);
    if (fresh) it->second = std::make_shared<State>();
    return Seat(this, key, it->second, fresh);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<State>> flights_;
};

}  // namespace kj
