// Admission in the gateway, before Redis: byte limits, batch size, the tenant's quota of jobs
// waiting for a result and its rate (token bucket). All-or-nothing for a batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config.h"

namespace kj::gateway {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double rate_per_s, double burst, Clock::time_point now);
  bool take(double n, Clock::time_point now);  // false (nothing taken) when fewer than n are there

 private:
  double rate_per_s_, burst_, tokens_;
  Clock::time_point last_;
};

// Why a request was refused; the names are the metric's `reason` label and the error's `code`.
enum class Refusal { None, JobTooLarge, BatchTooLarge, OverQuota, RateLimited };
std::string_view refusal_name(Refusal r);

class Admission {
 public:
  explicit Admission(const GatewayConfig& config);
  // Reserves `jobs` places in the tenant's quota and rate when every check passes.
  Refusal admit(const std::string& tenant, std::size_t jobs, std::uint64_t largest_job_bytes);
  // Every admitted job is then either written (Redis took it, or it was a duplicate) or, with
  // release, given back (duplicates and failures: Redis holds nothing new for it).
  void written(const std::string& tenant, std::size_t jobs);
  void release(const std::string& tenant, std::size_t jobs);
  // Every request of an authenticated tenant, whatever its verb: one from its request bucket.
  bool take_request(const std::string& tenant);

  // The refresher: note each tenant's admissions, read kj:{pN}:queued:<tenant> from Redis, then set
  // the count to that reading plus what was in flight or admitted since the note (those may be
  // missing from the reading; counting one twice refuses early until the next reading).
  struct Note {
    std::string tenant;
    unsigned long long admitted = 0;
    long long in_flight = 0;
  };
  std::vector<Note> note() const;  // every tenant seen so far
  void set_queued(const Note& note, long long queued_in_redis);

 private:
  struct TenantState {
    TokenBucket bucket, requests;
    long long queued = 0;
    long long in_flight = 0;          // admitted, Redis not answered yet
    unsigned long long admitted = 0;  // ever
  };
  TenantState& state_of(const std::string& tenant);  // mutex_ held

  const GatewayConfig& config_;
  mutable std::mutex mutex_;
  std::map<std::string, TenantState> tenants_;
};

}  // namespace kj::gateway
