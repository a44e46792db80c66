// Native builds shared between two judging nodes through a real redis-server, with real sandboxes
// and the real compiler: the second node takes the first node's build (and its failure) instead of
// compiling, so a fleet builds each task's reference and each candidate once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <utility>
#include <filesystem>

#include "buildfarm/redis_build_store.h"
#include "cli/job_builder.h"
#include "kjsandbox/sandbox.h"
#include "pipeline/judge.h"
#include "pipeline/run/workspace.h"
#include "redis_server.h"

namespace kj::buildfarm {
namespace {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

class NativeShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(kjsandbox::namespaces_available(&why)) << why;
    q.load_functions();
  }
  void TearDown() override {
    for (const auto& c : nodes) fs::remove_all(c.state_dir);
  }
  // A judging node with its own state dir (so its own, empty, build cache) on the shared Redis.
  const Config& node(const std::string& name) {
    Config c = load_config(std::nullopt);
    c.node = name;
    c.redis.url = redis.url();
    c.state_dir = fs::temp_directory_path() / ("kjshare-" + name + "-" + std::to_string(::getpid()));
    c.runner_path = KJ_RUNNER;
    prepare_state_dir(c.state_dir);
    nodes.push_back(std::move(c));
    return nodes.back();
  }
  v1::Job job(const std::string& candidate, const std::string& id) {
    cli::JobSpec spec;
    spec.task_json = fs::path(KJ_EXAMPLES_DIR) / "cpp/vector_add/task.json";
    spec.candidate = fs::path(KJ_EXAMPLES_DIR) / "cpp/vector_add" / candidate;
    spec.run_wall_ms = 4000;
    spec.trials = 3;
    spec.sets = 2;
    v1::Job j = cli::build_job(spec);
    j.set_job_id(id);
    return j;
  }
  std::size_t artifacts() {
    std::size_t n = 0;
    std::string cursor = "0";
    do {
      auto r = q.command({"SCAN", cursor, "MATCH", "kj:{p0}:art:*", "COUNT", "100"});
      cursor = r.front().value_or("0");
      n += r.size() - 1;
    } while (cursor != "0");
    return n;
  }
  // The same candidate judged on node a, then on node b (each with its own empty cache): a's
  // result, then b's. a must have compiled it.
  std::pair<v1::Result, v1::Result> on_a_then_b(const std::string& candidate, const std::string& expect) {
    const Config &a = node("a"), &b = node("b");
    RedisBuildStore store_a(a, RedisBuildStore::Role::Judge), store_b(b, RedisBuildStore::Role::Judge);
    v1::Result first = judge(job(candidate, "on-a"), JudgeContext{a, "a/0", nullptr, &store_a});
    EXPECT_EQ(v1::Verdict_Name(first.status()), expect) << first.message();
    EXPECT_FALSE(first.compile().cache_hit());
    v1::Result second = judge(job(candidate, "on-b"), JudgeContext{b, "b/0", nullptr, &store_b});
    EXPECT_EQ(v1::Verdict_Name(second.status()), expect) << second.message();
    return {std::move(first), std::move(second)};
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
  std::deque<Config> nodes;
};

TEST_F(NativeShareTest, ASecondNodeTakesTheFirstNodesBuildInsteadOfCompiling) {
  const auto [first, second] = on_a_then_b("ok.cpp", "OK");
  EXPECT_TRUE(second.compile().cache_hit()) << "b's own cache was empty: the build came from the store";
  EXPECT_EQ(second.compile().log(), first.compile().log());
  EXPECT_EQ(artifacts(), 2u);  // the candidate's build and the reference's; b compiled and published nothing
}

TEST_F(NativeShareTest, ACandidatesBuildFailureIsSharedToo) {
  const auto [first, second] = on_a_then_b("compile_error.cpp", "COMPILE_ERROR");
  EXPECT_TRUE(second.compile().cache_hit());
  EXPECT_EQ(second.message(), first.message());
  EXPECT_EQ(second.compile().log(), first.compile().log());
}

}  // namespace
}  // namespace kj::buildfarm
