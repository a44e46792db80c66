// A bounded randomized fuzz of the job decoder (kj::decode_job and the daemon's decode_for_judge):
// random bytes and mutations of valid jobs never crash, hang or throw; everything is a Job or an
// InvalidJob with a message. Runs under ASan/UBSan in the test build. Deterministic seed.
#include <gtest/gtest.h>

#include <random>

#include "pipeline/judge.h"
#include "pipeline/job/validate.h"

namespace {
namespace v1 = kjudge::v1;

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  v1::Job t;
  t.set_job_id("j1");
  t.set_tenant("t");
  t.mutable_trivial()->add_argv("/bin/sleep");
  t.mutable_trivial()->add_argv("0.1");
  out.push_back(t.SerializeAsString());
  v1::Job n;
  n.set_job_id("n1");
  n.set_tenant("t");
  auto* nt = n.mutable_native();
  nt->set_language(v1::CPP);
  nt->mutable_candidate()->set_text("extern \"C\" void f(float* x){}");
  nt->mutable_reference_source()->set_text("extern \"C\" void f(float* x){}");
  nt->set_entry("f");
  auto* a = nt->add_args();
  a->set_name("x");
  a->mutable_tensor()->set_dtype(v1::F32);
  a->mutable_tensor()->set_role(v1::INOUT);
  a->mutable_tensor()->add_shape(16);
  out.push_back(n.SerializeAsString());
  return out;
}

void check(const std::optional<std::string>& payload, const kj::LimitsConfig& limits) {
  for (const std::string tenant : {"", "t"}) {
    auto a = kj::decode_job(payload, tenant, limits);
    if (auto* bad = std::get_if<kj::InvalidJob>(&a)) {
      EXPECT_FALSE(bad->message.empty());
    }
    auto b = kj::decode_for_judge(payload, tenant, limits);
    if (auto* bad = std::get_if<kj::InvalidJob>(&b)) {
      EXPECT_FALSE(bad->message.empty());
    }
  }
}

TEST(FaultDecoderFuzz, RandomBytesAndMutationsNeverCrash) {
  std::mt19937_64 rng(20261122);
  kj::LimitsConfig limits;
  limits.max_job_bytes = 64 << 10;
  const auto base = seeds();
  check(std::nullopt, limits);
  check(std::string(), limits);
  check(std::string(limits.max_job_bytes + 1, '\x0a'), limits);
  int iterations = 0;
  for (int i = 0; i < 20000; ++i, ++iterations) {
    std::string s;
    if (i % 4 == 0) {  // pure random
      s.resize(rng() % 256);
      for (auto& c : s) c = static_cast<char>(rng());
    } else {  // mutate a valid job: flip, insert, delete, truncate, splice
      s = base[rng() % base.size()];
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const std::size_t pos = rng() % s.size();
        switch (rng() % 5) {
          case 0: s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8))); break;
          case 1: s.insert(pos, 1, static_cast<char>(rng())); break;
          case 2: s.erase(pos, 1 + rng() % 4); break;
          case 3: s.resize(pos); break;
          default: s += base[rng() % base.size()].substr(0, rng() % 32); break;
        }
      }
    }
    check(s, limits);
  }
  EXPECT_EQ(iterations, 20000);
}

}  // namespace
