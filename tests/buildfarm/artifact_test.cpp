// The artifact's bytes: round trip, and every way a stored value can be wrong is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "buildfarm/artifact.h"
#include "common/config.h"
#include "kjudge/v1/result.pb.h"
#include "pipeline/kernelbench/build_share.h"

namespace kj::buildfarm {
namespace {

const std::string kExt = "0123456789abcdef0123456789abcdef";

SharedBuild sample() {
  SharedBuild b;
  b.key = std::string(64, 'a');
  b.builder = "node-b";
  b.memo = {{"extensions", nlohmann::json::array({{{"key", kExt}, {"so", "/job/ext/" + kExt + "/m.so"}}})},
            {"torch_file", "/nonexistent/torch/__init__.py"}};
  b.files.push_back({kExt + "/m.so", std::string("\x7f" "ELF\0\x01\xff binary", 15)});
  b.partial_result = std::string("\x08\x01\0", 3);
  return b;
}

TEST(Artifact, RoundTrip) {
  const std::string v = pack_artifact(sample());
  std::string why;
  auto b = unpack_artifact(v, std::string(64, 'a'), 1 << 20, why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->builder, "node-b");
  ASSERT_EQ(b->files.size(), 1u);
  EXPECT_EQ(b->files[0].bytes, sample().files[0].bytes);
  EXPECT_EQ(b->partial_result, sample().partial_result);
  EXPECT_EQ(b->memo["extensions"][0]["key"], kExt);
}

TEST(Artifact, AnyFlippedByteFailsTheHash) {
  const std::string v = pack_artifact(sample());
  for (std::size_t i = 7 + 65; i < v.size(); i += 7) {
    std::string bad = v;
    bad[i] ^= 0x20;
    std::string why;
    EXPECT_FALSE(unpack_artifact(bad, std::string(64, 'a'), 1 << 20, why)) << "byte " << i;
    EXPECT_EQ(why, "sha256 mismatch");
  }
}

TEST(Artifact, TruncatedWrongKeyOrTooLargeIsRefused) {
  const std::string v = pack_artifact(sample());
  std::string why;
  EXPECT_FALSE(unpack_artifact(v.substr(0, v.size() - 3), std::string(64, 'a'), 1 << 20, why));
  EXPECT_FALSE(unpack_artifact(v, std::string(64, 'b'), 1 << 20, why));
  EXPECT_EQ(why, "artifact of another key");
  EXPECT_FALSE(unpack_artifact(v, std::string(64, 'a'), v.size() - 1, why));
  EXPECT_EQ(why, "larger than artifact_max_bytes");
  EXPECT_FALSE(unpack_artifact("garbage", std::string(64, 'a'), 1 << 20, why));
}

TEST(Artifact, InstallRefusesPathsOutsideTheExtensionFolder) {
  const auto dir = std::filesystem::temp_directory_path() / ("kjart-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "memo");
  const BuildMemo memo(dir / "memo", {});
  for (const std::string& bad : std::vector<std::string>{"../x.so", kExt + "/../../x.so", kExt, "/etc/passwd", kExt + "/", "short/x.so"}) {
    SharedBuild b = sample();
    b.files = {{bad, "x"}};
    EXPECT_FALSE(install_shared(b, dir / "ext", memo)) << bad;
  }
  SharedBuild good = sample();
  EXPECT_TRUE(install_shared(good, dir / "ext", memo));
  std::ifstream f(dir / "ext" / kExt / "m.so", std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(got, good.files[0].bytes);
  EXPECT_FALSE(std::filesystem::exists(dir / "x.so"));
  std::filesystem::remove_all(dir);
}

TEST(Artifact, OnlyTheCandidatesFailuresAreShared) {
  kjudge::v1::Result r;
  r.mutable_compile()->set_log("error: expected ';'");
  EXPECT_TRUE(shared_failure("k", {kjudge::v1::COMPILE_ERROR, "compile error"}, "", r));
  EXPECT_FALSE(shared_failure("k", {kjudge::v1::INFRA_ERROR, "disk full"}, "", r));
  EXPECT_FALSE(shared_failure("k", {kjudge::v1::CANCELLED, "cancelled"}, "", r));
  EXPECT_FALSE(shared_failure("k", {kjudge::v1::EXPIRED, "expired"}, "", r));
  auto b = shared_failure("k", {kjudge::v1::COMPILE_ERROR, "compile error"}, "detail", r);
  kjudge::v1::Result again;
  std::string detail;
  const Decision d = replay_failure(*b, again, detail);
  EXPECT_EQ(d.verdict, kjudge::v1::COMPILE_ERROR);
  EXPECT_EQ(again.compile().log(), "error: expected ';'");
  EXPECT_EQ(detail, "detail");
}

}  // namespace
}  // namespace kj::buildfarm

namespace kj {
namespace {

TEST(BuildConfig, DefaultsAndKeys) {
  const auto dir = std::filesystem::temp_directory_path() / ("kjcfg-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.toml") << "[daemon]\nrole = \"build\"\n[build]\nlease_ms = 2000\nbuilder_ttl_ms = 3000\n";
  const Config c = load_config(dir / "a.toml");
  EXPECT_EQ(c.role, "build");
  EXPECT_EQ(c.build.lease.count(), 2000);
  EXPECT_EQ(c.build.builder_ttl.count(), 3000);
  EXPECT_EQ(c.build.request_idle.count(), 60000);
  EXPECT_EQ(c.build.local_max, -1);
  EXPECT_FALSE(c.build.shared);
  EXPECT_EQ(c.build.concurrency, 0);  // sized from the node's CPUs and memory
  std::ofstream(dir / "b.toml") << "[build]\nlocal_max = -2\n";
  EXPECT_THROW(load_config(dir / "b.toml"), std::runtime_error);
  std::ofstream(dir / "d.toml") << "[build]\nconcurrency = 3\n";
  EXPECT_EQ(load_config(dir / "d.toml").build.concurrency, 3);
  std::ofstream(dir / "e.toml") << "[build]\nconcurrency = -1\n";
  EXPECT_THROW(load_config(dir / "e.toml"), std::runtime_error);
  std::ofstream(dir / "c.toml") << "[daemon]\nrole = \"gpu\"\n";
  EXPECT_THROW(load_config(dir / "c.toml"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kj
