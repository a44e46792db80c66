#include "pipeline/reward.h"

#include <algorithm>
#include <cmath>

namespace kj {
namespace v1 = kjudge::v1;

namespace {

constexpr double kLambda = 0.5;        // weight of log-speedup in default-v1/v2
constexpr double kMaxLogSpeedup = 2.0;  // clip(log2 speedup) to [-2, 2] (v1), [-1.5, 2] (v2)
constexpr double kMinLogSpeedupV2 = -1.5;  // v2: a correct kernel scores at least 0.25

bool is_cheat(v1::Verdict v) {
  return v == v1::CHEAT || v == v1::FALLBACK || v == v1::DECOY || v == v1::SUSPICIOUS || v == v1::UNVERIFIABLE;
}

// Fraction of input sets that passed: partial correctness sits between failure and success.
double fraction_correct(const v1::Result& r) {
  if (r.correctness().empty()) return 0;
  int ok = 0;
  for (const auto& s : r.correctness()) ok += s.passed();
  return static_cast<double>(ok) / r.correctness_size();
}

// default-v1 and default-v2 differ only in the floor of a correct kernel: v1's is 0 (at 0.25x and
// slower), the value trainers often give failures; v2's is 0.25 (at 0.35x and slower).
v1::Reward default_policy(const v1::Result& r, const char* version, double min_log_speedup) {
  v1::Reward w;
  w.set_policy_version(version);
  auto& c = *w.mutable_components();
  const auto v = r.status();
  if (v == v1::OK) {
    const double s = r.performance().speedup();
    const double log_s = s > 0 ? std::clamp(std::log2(s), min_log_speedup, kMaxLogSpeedup) : 0.0;
    c["correct"] = 1.0;
    c["log2_speedup_clipped"] = log_s;
    w.set_value(1.0 + kLambda * log_s);
  } else if (v == v1::INCORRECT) {
    const double f = fraction_correct(r);
    c["fraction_sets_correct"] = f;
    w.set_value(-0.5 + 0.5 * f);  // in (-1, 0]: better than not running, worse than correct
  } else if (is_cheat(v)) {
    c["cheat_penalty"] = -2.0;
    w.set_value(-2.0);
  } else {
    c["failure"] = -1.0;
    w.set_value(-1.0);  // compile/runtime/limit failures
  }
  return w;
}

v1::Reward binary_v1(const v1::Result& r) {
  v1::Reward w;
  w.set_policy_version("binary-v1");
  if (r.status() == v1::OK) {
    (*w.mutable_components())["correct"] = 0.3;
    (*w.mutable_components())["speedup"] = r.performance().speedup();
    w.set_value(0.3 + r.performance().speedup());
  } else if (is_cheat(r.status())) {
    w.set_value(-1.0);
  }
  return w;
}

v1::Reward buckets_v1(const v1::Result& r) {
  v1::Reward w;
  w.set_policy_version("buckets-v1");
  if (r.status() == v1::OK) {
    const double s = r.performance().speedup();
    w.set_value(s >= 2.0 ? 3.0 : s >= 1.2 ? 2.0 : s >= 0.8 ? 1.5 : 1.0);
  } else if (is_cheat(r.status())) {
    w.set_value(-2.0);
  } else {
    w.set_value(r.status() == v1::INCORRECT ? -0.5 : -1.0);
  }
  (*w.mutable_components())["bucket_value"] = w.value();
  return w;
}

}  // namespace

bool known_reward_policy(const std::string& p) {
  return p.empty() || p == "default" || p == "default-v1" || p == "default-v2" || p == "binary-v1" ||
         p == "buckets-v1";
}

v1::Reward compute_reward(const v1::Result& r, const std::string& policy) {
  // Infrastructure failures are never scored as the candidate's: no value, only the marker.
  if (r.status() == v1::INFRA_ERROR || r.status() == v1::INVALID_JOB || r.status() == v1::CANCELLED ||
      r.status() == v1::EXPIRED) {
    v1::Reward w;
    w.set_policy_version("none");
    return w;
  }
  if (policy == "binary-v1") return binary_v1(r);
  if (policy == "buckets-v1") return buckets_v1(r);
  if (policy == "default-v1") return default_policy(r, "default-v1", -kMaxLogSpeedup);
  return default_policy(r, "default-v2", kMinLogSpeedupV2);
}

}  // namespace kj
