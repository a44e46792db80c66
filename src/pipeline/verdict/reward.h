// Reward policies (design §5 step 9). Versioned: the version is stored in every Result, so a
// trainer can tell which formula produced a number. Cheat verdicts always score below the worst
// honest failure.
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

// `policy`: "" or "default" → default_reward_policy() (default-v2: a correct kernel at least 0.25,
// above every failure); "default-v1": the same with a floor of 0 (both from
// python/kjudge/reward_policies.json, which kjudge.reward reads too); "binary-v1":
// 0.3·correct + speedup·correct; "buckets-v1": stepped speedup buckets. Unknown names fall back to
// the default (recorded).
kjudge::v1::Reward compute_reward(const kjudge::v1::Result& result, const std::string& policy);

bool known_reward_policy(const std::string& policy);

// The policy "" and "default" name, as reward_policies.json says.
const std::string& default_reward_policy();

}  // namespace kj
