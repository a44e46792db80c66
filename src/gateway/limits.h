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

#include "gateway/gateway_config.h"

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
  // Gives back places reserved for jobs that Redis did not take (duplicates, errors).
  void release(const std::string& tenant, std::size_t jobs);
  // The refresher's reading of kj:{pN}:queued:<tenant> (jobs without a result, in Redis).
  void set_queued(const std::string& tenant, long long queued);
  std::vector<std::string> tenants() const;  // every tenant seen so far

 private:
  struct TenantState {
    TokenBucket bucket;
    long long queued = 0;
  };
  TenantState& state_of(const std::string& tenant);  // mutex_ held

  const GatewayConfig& config_;
  mutable std::mutex mutex_;
  std::map<std::string, TenantState> tenants_;
};

}  // namespace kj::gateway
