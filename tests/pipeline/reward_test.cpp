#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "pipeline/verdict/reward.h"

namespace {
namespace v1 = kjudge::v1;

v1::Result with(v1::Verdict v, double speedup = 1.0) {
  v1::Result r;
  r.set_status(v);
  r.mutable_performance()->set_speedup(speedup);
  return r;
}

TEST(Reward, DefaultOrdersVerdicts) {
  const double ok_fast = kj::compute_reward(with(v1::OK, 4.0), "").value();
  const double ok_same = kj::compute_reward(with(v1::OK, 1.0), "").value();
  const double ok_slow = kj::compute_reward(with(v1::OK, 0.25), "").value();
  const double incorrect = kj::compute_reward(with(v1::INCORRECT), "").value();
  const double compile = kj::compute_reward(with(v1::COMPILE_ERROR), "").value();
  const double cheat = kj::compute_reward(with(v1::CHEAT), "").value();
  EXPECT_GT(ok_fast, ok_same);
  EXPECT_GT(ok_same, ok_slow);
  EXPECT_GT(ok_slow, incorrect);
  EXPECT_GT(incorrect, compile);
  EXPECT_GT(compile, cheat);  // cheats score strictly below compile failures
  EXPECT_DOUBLE_EQ(ok_same, 1.0);
  EXPECT_EQ(kj::compute_reward(with(v1::OK), "").policy_version(), "default-v2");
}

TEST(Reward, CorrectButSlowScoresAboveZeroUnderTheDefault) {
  // the value trainers give failures is 0: a correct kernel must never land there
  for (double s : {0.3, 0.1, 0.01}) {
    EXPECT_DOUBLE_EQ(kj::compute_reward(with(v1::OK, s), "").value(), 0.25) << s;
    EXPECT_GT(kj::compute_reward(with(v1::OK, s), "").value(), kj::compute_reward(with(v1::INCORRECT), "").value());
  }
  EXPECT_GT(kj::compute_reward(with(v1::OK, 0.5), "").value(), 0.25);  // above the floor it still rises
  EXPECT_DOUBLE_EQ(kj::compute_reward(with(v1::OK, 0.1), "default-v1").value(), 0.0);  // v1 as it was
  EXPECT_EQ(kj::compute_reward(with(v1::OK), "default-v1").policy_version(), "default-v1");
}

// tests/reward_cases.json: the values kjudge.reward's compute_score must give too (test_reward.py).
TEST(Reward, SharedCasesAgreeWithThePythonClient) {
  std::ifstream in(KJ_REWARD_CASES);
  ASSERT_TRUE(in) << KJ_REWARD_CASES;
  const auto cases = nlohmann::json::parse(in).at("cases");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    v1::Result r;
    v1::Verdict v;
    ASSERT_TRUE(v1::Verdict_Parse(c.at("verdict").get<std::string>(), &v));
    r.set_status(v);
    r.mutable_performance()->set_speedup(c.at("speedup").get<double>());
    const int passed = c.at("sets")[0].get<int>(), total = c.at("sets")[1].get<int>();
    for (int i = 0; i < total; ++i) r.add_correctness()->set_passed(i < passed);
    EXPECT_NEAR(kj::compute_reward(r, c.at("policy").get<std::string>()).value(), c.at("value").get<double>(), 1e-12)
        << c.dump();
  }
  EXPECT_EQ(kj::default_reward_policy(), "default-v2");
}

TEST(Reward, SpeedupIsClipped) {
  EXPECT_DOUBLE_EQ(kj::compute_reward(with(v1::OK, 1e6), "").value(), kj::compute_reward(with(v1::OK, 4.0), "").value());
}

TEST(Reward, InfraErrorsAreNeverScored) {
  auto w = kj::compute_reward(with(v1::INFRA_ERROR), "");
  EXPECT_EQ(w.policy_version(), "none");
  EXPECT_EQ(w.value(), 0.0);
}

TEST(Reward, AlternativePolicies) {
  EXPECT_DOUBLE_EQ(kj::compute_reward(with(v1::OK, 2.0), "binary-v1").value(), 2.3);
  EXPECT_EQ(kj::compute_reward(with(v1::OK, 2.0), "buckets-v1").policy_version(), "buckets-v1");
  EXPECT_LT(kj::compute_reward(with(v1::CHEAT), "buckets-v1").value(),
            kj::compute_reward(with(v1::COMPILE_ERROR), "buckets-v1").value());
}

}  // namespace
