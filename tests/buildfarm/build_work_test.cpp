// Where a build node finds work, against a real redis-server: the build requests kj_submit writes
// once build nodes announced themselves, read through the build nodes' own group (each request to
// one build node, a dead one's taken over), which KernelBench jobs they turn into builds and for
// which CUDA architectures (the judging nodes publish theirs in kj:{pN}:archs).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "buildfarm/build_work.h"
#include "pipeline/kernelbench/build.h"
#include "redis_server.h"

namespace kj::buildfarm {
namespace {
namespace v1 = kjudge::v1;
using namespace std::chrono_literals;
using kjqueue::Keys;

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

class BuildWorkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    q.load_functions();
    cfg.node = "builder";
    cfg.redis.url = redis.url();
    cfg.workers = 2;
  }
  void submit(const v1::Job& job) { q.submit("t1", job.job_id(), job.SerializeAsString()); }
  Config judge_with_arch(const std::string& arch) const {
    Config c = cfg;
    c.kernelbench.cuda_arch_list = arch;
    return c;
  }
  std::vector<BuildWork> work_of(RedisBuildStore& store, const std::vector<std::string>& archs,
                                 std::vector<kjqueue::BuildRequest>& settled, const std::string& consumer = "builder") {
    return builds_for(q, store, cfg, archs, q.read_build_requests(consumer, {"t1"}, 100, 0ms, false), settled);
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
  Config cfg;
};

TEST_F(BuildWorkTest, RequestsAreWrittenOnlyOnceBuildNodesAnnouncedThemselves) {
  submit(kernelbench_job("before", v1::BACKEND_CPU));
  EXPECT_TRUE(q.read_build_requests("builder", {"t1"}, 10, 0ms, false).empty());
  q.announce_build_requests();
  submit(kernelbench_job("after", v1::BACKEND_CPU));
  v1::Job high = kernelbench_job("high", v1::BACKEND_CPU);
  high.set_priority(5);
  q.submit("t1", high.job_id(), high.SerializeAsString(), kjqueue::SubmitOptions{"", 0, 1});
  auto reqs = q.read_build_requests("builder", {"t1"}, 10, 0ms, false);
  ASSERT_EQ(reqs.size(), 2u);
  const auto entries = q.job_entries(reqs);
  std::set<std::pair<std::string, int>> got;
  for (const auto& e : entries) {
    ASSERT_TRUE(e);
    got.insert({e->job_id, e->lane});
  }
  EXPECT_EQ(got, (std::set<std::pair<std::string, int>>{{"after", 0}, {"high", 1}}));
  // a request is the job's entry id, not a copy of the job: [request id, "e", entry id]
  const auto raw = q.command({"XRANGE", Keys::build_requests(0, "t1", 0), "-", "+"});
  ASSERT_EQ(raw.size(), 3u);
  EXPECT_EQ(raw[1], "e");
  EXPECT_EQ(raw[2], reqs[0].lane == 0 ? reqs[0].entry : reqs[1].entry);
}

TEST_F(BuildWorkTest, EachRequestGoesToOneBuildNodeAndADeadOnesAreTakenOver) {
  q.announce_build_requests();
  for (int i = 0; i < 10; ++i) submit(kernelbench_job("j" + std::to_string(i), v1::BACKEND_CPU));
  kjqueue::Queue q2(redis.endpoint());
  const auto a = q.read_build_requests("a", {"t1"}, 4, 0ms, false);
  const auto b = q2.read_build_requests("b", {"t1"}, 100, 0ms, false);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(b.size(), 6u);
  std::set<std::string> ids;
  for (const auto* side : {&a, &b})
    for (const auto& r : *side) EXPECT_TRUE(ids.insert(r.entry).second) << "delivered twice: " << r.entry;
  q2.ack_build_requests(b);
  // "a" dies with its 4 unacked: its next incarnation reads them again ...
  EXPECT_EQ(q.read_build_requests("a", {"t1"}, 100, 0ms, /*own_pending=*/true).size(), 4u);
  // ... or another build node takes them once idle long enough
  EXPECT_TRUE(q2.claim_build_requests("b", {"t1"}, 60s, 100).empty());
  std::this_thread::sleep_for(150ms);
  const auto taken = q2.claim_build_requests("b", {"t1"}, 100ms, 100);
  EXPECT_EQ(taken.size(), 4u);
  q2.ack_build_requests(taken);
  EXPECT_EQ(q.read_build_requests("a", {"t1"}, 100, 0ms, true).size(), 0u);
  EXPECT_EQ(q.command({"XPENDING", Keys::build_requests(0, "t1", 0), Keys::kBuildGroup}).front(), "0");
}

TEST_F(BuildWorkTest, ArchitecturesComeFromTheJudgingNodesHashUnlessConfigured) {
  const std::int64_t now = 1'000'000;
  const std::map<std::string, std::string> archs = {
      {"gpu-a", "2000000 9.0"}, {"gpu-b", "2000000 8.0"}, {"gpu-c", "2000000 9.0"},
      {"gone", "999999 7.0"},                 // its node stopped publishing
      {"odd", "2000000 9.0\"; touch /x"},     // not an arch list
      {"junk", "not a value"}};
  EXPECT_EQ(cuda_arch_lists_to_build(cfg, archs, now), (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(cuda_arch_lists_to_build(judge_with_arch("9.0+PTX"), archs, now), std::vector<std::string>{"9.0+PTX"});
  EXPECT_TRUE(cuda_arch_lists_to_build(cfg, {}, now).empty());
}

TEST_F(BuildWorkTest, ACudaJobIsBuiltUnderTheKeyEachJudgingArchitectureComputes) {
  q.announce_build_requests();
  for (const auto& job : {kernelbench_job("j-cuda", v1::BACKEND_CUDA), kernelbench_job("j-cpu", v1::BACKEND_CPU)}) submit(job);
  RedisBuildStore store(cfg, RedisBuildStore::Role::Build);
  std::vector<kjqueue::BuildRequest> settled;
  const auto work = work_of(store, {"8.0", "9.0"}, settled);
  EXPECT_TRUE(settled.empty());
  std::set<std::pair<std::string, std::string>> got, want;  // (job, arch) -> key
  for (const auto& w : work) got.insert({w.job.job_id() + "@" + w.cuda_arch_list, w.key});
  const auto cuda = kernelbench_job("j-cuda", v1::BACKEND_CUDA), cpu = kernelbench_job("j-cpu", v1::BACKEND_CPU);
  want = {{"j-cuda@8.0", kernelbench_build_key(cuda, judge_with_arch("8.0"))},
          {"j-cuda@9.0", kernelbench_build_key(cuda, judge_with_arch("9.0"))},
          {"j-cpu@", kernelbench_build_key(cpu, judge_with_arch("9.0"))}};  // a CPU build has no architecture
  EXPECT_EQ(got, want);
}

TEST_F(BuildWorkTest, RequestsThatNeedNoBuildAreSettled) {
  q.announce_build_requests();
  submit(kernelbench_job("built", v1::BACKEND_CPU));
  submit(kernelbench_job("answered", v1::BACKEND_CPU));
  submit(kernelbench_job("cancelled", v1::BACKEND_CPU));
  v1::Job late = kernelbench_job("late", v1::BACKEND_CPU);
  late.mutable_deadline()->set_seconds(1);
  submit(late);
  q.submit("t1", "not-kb", "not a job");
  q.command({"XADD", Keys::build_requests(0, "t1", 0), "*", "e", "12-34"});  // names no entry
  RedisBuildStore store(cfg, RedisBuildStore::Role::Build);
  ASSERT_EQ(store.claim({kernelbench_build_key(kernelbench_job("built", v1::BACKEND_CPU), cfg), "t1",
                         std::chrono::steady_clock::now(), std::nullopt, -1}).kind,
            BuildClaim::Leased);  // being built elsewhere
  q.command({"SET", Keys::result(0, "t1", "answered"), "r"});
  q.cancel_job("t1", "cancelled", 60s);
  std::vector<kjqueue::BuildRequest> settled;
  EXPECT_TRUE(work_of(store, {}, settled).empty());
  EXPECT_EQ(settled.size(), 6u);
}

}  // namespace
}  // namespace kj::buildfarm
