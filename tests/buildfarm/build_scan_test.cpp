// Where a build node finds work, against a real redis-server: which KernelBench jobs it builds and
// for which CUDA architectures (the judging nodes' heartbeats say; it has no GPU to ask).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "buildfarm/build_scan.h"
#include "pipeline/kernelbench/kernelbench_build.h"
#include "redis_server.h"

namespace kj::buildfarm {
namespace {
namespace v1 = kjudge::v1;
using namespace std::chrono_literals;

v1::Job kernelbench_job(const std::string& id, v1::Backend backend) {
  v1::Job job;
  job.set_job_id(id);
  job.set_tenant("t1");
  auto* kb = job.mutable_kernelbench();
  kb->set_reference_py("class Model: ...\n");
  kb->set_model_new_py("class ModelNew: ...  # " + id + "\n");
  kb->set_backend(backend);
  return job;
}

class BuildScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    q.load_functions();
    cfg.node = "builder";
    cfg.redis.url = redis.url();
    cfg.workers = 2;
    for (const auto& job : {kernelbench_job("j-cuda", v1::BACKEND_CUDA), kernelbench_job("j-cpu", v1::BACKEND_CPU)})
      q.submit("t1", job.job_id(), job.SerializeAsString());
  }
  Config judge_with_arch(const std::string& arch) const {
    Config c = cfg;
    c.kernelbench.cuda_arch_list = arch;
    return c;
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
  Config cfg;
};

TEST_F(BuildScanTest, ArchitecturesComeFromTheJudgingNodesUnlessConfigured) {
  q.heartbeat("gpu-a", R"({"workers":16,"cuda_arch_list":"9.0"})", 30s);
  q.heartbeat("gpu-b", R"({"workers":8,"cuda_arch_list":"8.0"})", 30s);
  q.heartbeat("gpu-c", R"({"workers":8,"cuda_arch_list":"9.0"})", 30s);
  q.heartbeat("cpu-judge", R"({"workers":2})", 30s);                          // no GPU: publishes none
  q.heartbeat("builder-2", R"({"role":"build","cuda_arch_list":"7.0"})", 30s);  // not a judge
  q.heartbeat("odd", R"({"cuda_arch_list":"9.0\"; touch /x"})", 30s);         // not an arch list
  q.heartbeat("junk", "not json", 30s);
  EXPECT_EQ(cuda_arch_lists_to_build(cfg, q.nodes()), (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(cuda_arch_lists_to_build(judge_with_arch("9.0+PTX"), q.nodes()), std::vector<std::string>{"9.0+PTX"});
  EXPECT_TRUE(cuda_arch_lists_to_build(cfg, {}).empty());
}

TEST_F(BuildScanTest, ACudaJobIsBuiltUnderTheKeyEachJudgingArchitectureComputes) {
  RedisBuildStore store(cfg, RedisBuildStore::Role::Build);
  Settled settled;
  const auto work = find_builds(q, store, cfg, {"8.0", "9.0"}, "t1", 10, settled);
  std::set<std::pair<std::string, std::string>> got, want;  // (job, arch) -> key
  for (const auto& w : work) {
    got.insert({w.job.job_id() + "@" + w.cuda_arch_list, w.key});
    EXPECT_EQ(w.key, kernelbench_build_key(w.job, judge_with_arch(w.cuda_arch_list.empty() ? "9.0" : w.cuda_arch_list)));
  }
  const auto cuda = kernelbench_job("j-cuda", v1::BACKEND_CUDA), cpu = kernelbench_job("j-cpu", v1::BACKEND_CPU);
  want = {{"j-cuda@8.0", kernelbench_build_key(cuda, judge_with_arch("8.0"))},
          {"j-cuda@9.0", kernelbench_build_key(cuda, judge_with_arch("9.0"))},
          {"j-cpu@", kernelbench_build_key(cpu, judge_with_arch("9.0"))}};  // a CPU build has no architecture
  EXPECT_EQ(got, want);
  EXPECT_NE(kernelbench_build_key(cuda, judge_with_arch("8.0")), kernelbench_build_key(cuda, judge_with_arch("9.0")));
}

TEST_F(BuildScanTest, ACudaJobWaitsForAnArchitectureThenIsFound) {
  RedisBuildStore store(cfg, RedisBuildStore::Role::Build);
  Settled settled;
  auto work = find_builds(q, store, cfg, {}, "t1", 10, settled);
  ASSERT_EQ(work.size(), 1u);  // with no judge's architecture known, only the CPU build
  EXPECT_EQ(work[0].job.job_id(), "j-cpu");
  ASSERT_EQ(store.claim({work[0].key, "t1", std::chrono::steady_clock::now(), std::nullopt, -1}).kind,
            BuildClaim::Leased);  // being built: not offered again
  work = find_builds(q, store, cfg, {"9.0"}, "t1", 10, settled);
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].job.job_id(), "j-cuda");
  EXPECT_EQ(work[0].cuda_arch_list, "9.0");
}

}  // namespace
}  // namespace kj::buildfarm
