#include "gateway/limits.h"

#include <algorithm>

namespace kj::gateway {

TokenBucket::TokenBucket(double rate_per_s, double burst, Clock::time_point now)
    : rate_per_s_(rate_per_s), burst_(burst), tokens_(burst), last_(now) {}

bool TokenBucket::take(double n, Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + std::max(0.0, elapsed) * rate_per_s_);
  last_ = now;
  if (tokens_ < n) return false;
  tokens_ -= n;
  return true;
}

std::string_view refusal_name(Refusal r) {
  switch (r) {
    case Refusal::None: return "none";
    case Refusal::JobTooLarge: return "job_too_large";
    case Refusal::BatchTooLarge: return "batch_too_large";
    case Refusal::OverQuota: return "over_quota";
    case Refusal::RateLimited: return "rate_limited";
  }
  return "unknown";
}

Admission::Admission(const GatewayConfig& config) : config_(config) {}

Admission::TenantState& Admission::state_of(const std::string& tenant) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    const auto& l = config_.limits_for(tenant);
    const auto now = TokenBucket::Clock::now();
    // unset (a GatewayConfig not from load_gateway_config): the request bucket follows the job bucket
    const double request_rate =
        l.request_rate_per_s > 0 ? l.request_rate_per_s : std::max(l.rate_per_s, kMinRequestRate);
    const double request_burst = l.request_burst > 0 ? l.request_burst : std::max(l.burst, kMinRequestBurst);
    it = tenants_.emplace(tenant, TenantState{TokenBucket(l.rate_per_s, l.burst, now),
                                              TokenBucket(request_rate, request_burst, now)}).first;
  }
  return it->second;
}

Refusal Admission::admit(const std::string& tenant, std::size_t jobs, std::uint64_t largest_job_bytes) {
  const auto& l = config_.limits_for(tenant);
  if (largest_job_bytes > l.max_job_bytes) return Refusal::JobTooLarge;
  if (jobs > l.max_batch_jobs) return Refusal::BatchTooLarge;
  std::lock_guard lock(mutex_);
  auto& s = state_of(tenant);
  if (s.queued + static_cast<long long>(jobs) > static_cast<long long>(l.max_queued)) return Refusal::OverQuota;
  if (!s.bucket.take(static_cast<double>(jobs), TokenBucket::Clock::now())) return Refusal::RateLimited;
  s.queued += static_cast<long long>(jobs);
  s.in_flight += static_cast<long long>(jobs);
  s.admitted += jobs;
  return Refusal::None;
}

bool Admission::take_request(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  return state_of(tenant).requests.take(1, TokenBucket::Clock::now());
}

void Admission::written(const std::string& tenant, std::size_t jobs) {
  std::lock_guard lock(mutex_);
  auto& s = state_of(tenant);
  s.in_flight = std::max(0LL, s.in_flight - static_cast<long long>(jobs));
}

void Admission::release(const std::string& tenant, std::size_t jobs) {
  std::lock_guard lock(mutex_);
  auto& s = state_of(tenant);
  s.queued = std::max(0LL, s.queued - static_cast<long long>(jobs));
  s.in_flight = std::max(0LL, s.in_flight - static_cast<long long>(jobs));
}

std::vector<Admission::Note> Admission::note() const {
  std::lock_guard lock(mutex_);
  std::vector<Note> out;
  for (const auto& [name, s] : tenants_) out.push_back({name, s.admitted, s.in_flight});
  return out;
}

void Admission::set_queued(const Note& note, long long queued_in_redis) {
  std::lock_guard lock(mutex_);
  auto& s = state_of(note.tenant);
  s.queued = queued_in_redis + note.in_flight + static_cast<long long>(s.admitted - note.admitted);
}

}  // namespace kj::gateway
