#include "pipeline/verdict/reward.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "pipeline/verdict/reward_policies_data.h"

namespace kj {
namespace v1 = kjudge::v1;

namespace {

// One default-family policy's numbers, from python/kjudge/reward_policies.json (the file
// kjudge.reward reads too, so the daemon's and the client's rewards cannot drift).
struct DefaultPolicy {
  double ok_base, log2_speedup_weight, log2_speedup_min, log2_speedup_max;
  double incorrect_base, incorrect_per_fraction_sets_correct, failure, cheat;
};

struct RewardPolicies {
  std::string default_name;
  std::set<std::string> cheat_verdicts, unscored_verdicts;
  std::map<std::string, DefaultPolicy> defaults;
};

DefaultPolicy parse_default_policy(const nlohmann::json& j) {
  return {j.at("ok_base").get<double>(), j.at("log2_speedup_weight").get<double>(),
          j.at("log2_speedup_min").get<double>(), j.at("log2_speedup_max").get<double>(),
          j.at("incorrect_base").get<double>(), j.at("incorrect_per_fraction_sets_correct").get<double>(),
          j.at("failure").get<double>(), j.at("cheat").get<double>()};
}

const RewardPolicies& policies() {
  static const RewardPolicies p = [] {
    const auto j = nlohmann::json::parse(kRewardPoliciesJson);
    RewardPolicies out;
    out.default_name = j.at("default_policy").get<std::string>();
    for (const auto& v : j.at("cheat_verdicts")) out.cheat_verdicts.insert(v.get<std::string>());
    for (const auto& v : j.at("unscored_verdicts")) out.unscored_verdicts.insert(v.get<std::string>());
    for (const auto& [name, params] : j.at("policies").items()) out.defaults.emplace(name, parse_default_policy(params));
    return out;
  }();
  return p;
}

bool is_cheat(v1::Verdict v) { return policies().cheat_verdicts.count(v1::Verdict_Name(v)) > 0; }

// Fraction of input sets that passed: partial correctness sits between failure and success.
double fraction_correct(const v1::Result& r) {
  if (r.correctness().empty()) return 0;
  int ok = 0;
  for (const auto& s : r.correctness()) ok += s.passed();
  return static_cast<double>(ok) / r.correctness_size();
}

// The default family (default-v1, default-v2): compile/runtime failure < INCORRECT (rising with the
// sets that passed) < correct (rising with log2 speedup); cheat verdicts below every honest outcome.
v1::Reward default_policy(const v1::Result& r, const std::string& version, const DefaultPolicy& p) {
  v1::Reward w;
  w.set_policy_version(version);
  auto& c = *w.mutable_components();
  const auto v = r.status();
  if (v == v1::OK) {
    const double s = r.performance().speedup();
    const double log_s = s > 0 ? std::clamp(std::log2(s), p.log2_speedup_min, p.log2_speedup_max) : 0.0;
    c["correct"] = 1.0;
    c["log2_speedup_clipped"] = log_s;
    w.set_value(p.ok_base + p.log2_speedup_weight * log_s);
  } else if (v == v1::INCORRECT) {
    const double f = fraction_correct(r);
    c["fraction_sets_correct"] = f;
    w.set_value(p.incorrect_base + p.incorrect_per_fraction_sets_correct * f);
  } else if (is_cheat(v)) {
    c["cheat_penalty"] = p.cheat;
    w.set_value(p.cheat);
  } else {
    c["failure"] = p.failure;
    w.set_value(p.failure);  // compile/runtime/limit failures
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
  return p.empty() || p == "default" || policies().defaults.count(p) || p == "binary-v1" || p == "buckets-v1";
}

const std::string& default_reward_policy() { return policies().default_name; }

v1::Reward compute_reward(const v1::Result& r, const std::string& policy) {
  // Infrastructure failures are never scored as the candidate's: no value, only the marker.
  if (policies().unscored_verdicts.count(v1::Verdict_Name(r.status()))) {
    v1::Reward w;
    w.set_policy_version("none");
    return w;
  }
  if (policy == "binary-v1") return binary_v1(r);
  if (policy == "buckets-v1") return buckets_v1(r);
  const auto& defaults = policies().defaults;
  const auto it = defaults.find(policy);
  if (it != defaults.end()) return default_policy(r, it->first, it->second);
  return default_policy(r, default_reward_policy(), defaults.at(default_reward_policy()));
}

}  // namespace kj
