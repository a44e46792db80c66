// The file artifact store ([build] artifact_dir) on a real filesystem and a real redis-server:
// publish and read through a small marker, verification on every read (a corrupt, truncated or
// missing file is a miss that is rebuilt, never used), concurrent publishers of one artifact in
// separate processes, and prune.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "buildfarm/artifact.h"
#include "buildfarm/file_artifact_store.h"
#include "buildfarm/redis_build_store.h"
#include "common/sha256.h"
#include "redis_server.h"

namespace kj::buildfarm {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using kjqueue::Keys;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    q.load_functions();
    char tmpl[] = "/tmp/kjartstore.XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(root); }
  Config config(const std::string& node) {
    Config c;
    c.node = node;
    c.redis.url = redis.url();
    c.build.lease = 2000ms;
    c.build.artifact_dir = root / "store";
    c.workers = 2;
    return c;
  }
  ClaimRequest now(const std::string& key) { return {key, "t1", Clock::now(), std::nullopt, -1}; }
  SharedBuild built(const std::string& key, std::size_t bytes = 300'000) {
    SharedBuild b;
    b.key = key;
    b.memo = {{"extensions", nlohmann::json::array({"ext"})}};
    std::string so(bytes, '\0');
    for (std::size_t i = 0; i < so.size(); ++i) so[i] = static_cast<char>((i * 131 + key.size()) & 0xff);
    b.files.push_back({"ext/ext.so", so});
    return b;
  }
  // The file a published key's marker names.
  fs::path file_of(const std::string& key) {
    const auto ref = parse_ref(*q.command({"GET", Keys::artifact(0, key)}).front());
    EXPECT_TRUE(ref);
    return FileArtifactStore(root / "store").path_of(ref->digest);
  }
  kjtest::RedisServer redis;
  kjqueue::Queue q{redis.endpoint()};
  fs::path root;
};

TEST_F(FileStoreTest, ArtifactBytesGoToTheFileAndRedisHoldsOnlyAMarker) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), b(config("b"), RedisBuildStore::Role::Judge);
  ASSERT_EQ(a.claim(now("k1")).kind, BuildClaim::Leased);
  a.publish(built("k1"));
  const auto marker = *q.command({"GET", Keys::artifact(0, "k1")}).front();
  const auto ref = parse_ref(marker);
  ASSERT_TRUE(ref) << marker;
  EXPECT_LT(marker.size(), 100u);
  const fs::path f = file_of("k1");
  ASSERT_TRUE(fs::is_regular_file(f));
  EXPECT_EQ(fs::file_size(f), ref->size);
  EXPECT_EQ(f.parent_path().parent_path().filename(), "sha256");
  EXPECT_GT(std::stoll(*q.command({"PTTL", Keys::artifact(0, "k1")}).front()), 0);  // the marker expires
  const auto got = b.claim(now("k1"));
  ASSERT_EQ(got.kind, BuildClaim::Artifact);
  EXPECT_EQ(got.artifact->builder, "a");
  EXPECT_EQ(got.artifact->files.at(0).bytes, built("k1").files.at(0).bytes);
  // nothing but the directories and the one file: no temp file left behind
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "store")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST_F(FileStoreTest, ACorruptTruncatedOrMissingFileIsAMissThatIsRebuiltNeverUsed) {
  RedisBuildStore a(config("a"), RedisBuildStore::Role::Build), judge(config("j"), RedisBuildStore::Role::Judge);
  for (const std::string how : {"flip", "truncate", "remove", "swap"}) {
    const std::string key = "k-" + how;
    ASSERT_EQ(a.claim(now(key)).kind, BuildClaim::Leased);
    a.publish(built(key));
    const fs::path f = file_of(key);
    if (how == "flip") {
      std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(1000);
      io.put('\x7f');
    } else if (how == "truncate") {
      fs::resize_file(f, fs::file_size(f) / 2);
    } else if (how == "remove") {
      fs::remove(f);
    } else {  // another artifact's bytes under this digest: same size, wrong content
      const std::string other = pack_artifact(built("zz-" + how.substr(0, 1)));
      std::ofstream(f, std::ios::binary | std::ios::trunc) << other;
      q.command({"SET", Keys::artifact(0, key), format_ref({parse_ref(*q.command({"GET", Keys::artifact(0, key)}).front())->digest, other.size()})});
    }
    const auto got = judge.claim(now(key));
    EXPECT_EQ(got.kind, BuildClaim::Leased) << how;  // a miss: this node builds it again
    EXPECT_FALSE(got.artifact) << how;
    EXPECT_FALSE(fs::exists(f)) << how;  // the bad file is gone; the rebuild writes it anew
    judge.publish(built(key));
    const auto again = a.claim(now(key));
    ASSERT_EQ(again.kind, BuildClaim::Artifact) << how;
    EXPECT_EQ(again.artifact->builder, "j");
  }
  EXPECT_NE(judge.render_metrics().find("kjudge_builds_rejected_total 4"), std::string::npos) << judge.render_metrics();
}

TEST_F(FileStoreTest, AMarkerThatIsNotOneIsRejectedAndAnUnwritableStoreSharesNothing) {
  RedisBuildStore judge(config("j"), RedisBuildStore::Role::Judge);
  q.command({"SET", Keys::artifact(0, "k5"), "kjref1 not-a-digest 12"});
  EXPECT_EQ(judge.claim(now("k5")).kind, BuildClaim::Leased);
  EXPECT_FALSE(q.command({"GET", Keys::artifact(0, "k5")}).front());  // deleted
  // a store on a path that cannot be created: publish fails cleanly, no marker, lease released
  Config bad = config("bad");
  bad.build.artifact_dir = "/proc/kjudge-no-such-store";
  RedisBuildStore b(bad, RedisBuildStore::Role::Build);
  ASSERT_EQ(b.claim(now("k6")).kind, BuildClaim::Leased);
  b.publish(built("k6"));
  EXPECT_FALSE(q.command({"GET", Keys::artifact(0, "k6")}).front());
  EXPECT_FALSE(q.command({"GET", Keys::build_lease(0, "k6")}).front());
  EXPECT_NE(b.render_metrics().find("kjudge_builds_publish_failed_total 1"), std::string::npos);
}

// Publishers in separate processes write the same artifact (and others) at once, readers check
// every read: each read is whole and verified, one file per digest, no temp file left.
TEST_F(FileStoreTest, ConcurrentPublishersInSeparateProcessesNeverShowAPartialFile) {
  FileArtifactStore store(root / "store");
  std::vector<std::string> contents;
  for (int i = 0; i < 4; ++i) contents.push_back(std::string(1 << 20, static_cast<char>('a' + i)) + std::to_string(i));
  std::vector<pid_t> kids;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      for (int round = 0; round < 10; ++round) {
        for (const auto& c : contents) {
          const auto ref = store.put(c);
          std::string why;
          const auto got = store.get(ref, 64 << 20, why);
          if (!got || *got != c) ++bad;
        }
      }
      ::_exit(bad == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a reader saw a partial or wrong file";
  }
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "store")) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind(".tmp-", 0), std::string::npos) << e.path();
    EXPECT_EQ(e.path().filename().string(), sha256_hex(std::string(std::istreambuf_iterator<char>(std::ifstream(e.path(), std::ios::binary).rdbuf()), {})));
  }
  EXPECT_EQ(files, contents.size());
}

TEST_F(FileStoreTest, PruneRemovesOldFilesAndStaleTempFilesOnly) {
  FileArtifactStore store(root / "store");
  const auto old_ref = store.put("old artifact"), new_ref = store.put("new artifact");
  const fs::path stale = store.path_of(new_ref.digest).parent_path() / ".tmp-crashed-publisher";
  std::ofstream(stale) << "half";
  const auto two_hours_ago = fs::file_time_type::clock::now() - 2h;
  fs::last_write_time(store.path_of(old_ref.digest), two_hours_ago);
  fs::last_write_time(stale, two_hours_ago);
  EXPECT_EQ(store.prune(std::chrono::seconds(3600)), 2u);
  EXPECT_FALSE(fs::exists(store.path_of(old_ref.digest)));
  EXPECT_FALSE(fs::exists(stale));
  std::string why;
  EXPECT_TRUE(store.get(new_ref, 1 << 20, why)) << why;
  EXPECT_FALSE(store.get(old_ref, 1 << 20, why));
  EXPECT_EQ(why, "missing");
  EXPECT_FALSE(parse_ref("kjref1 " + std::string(64, 'g') + " 1"));
  EXPECT_FALSE(parse_ref("kjart1\n..."));
  EXPECT_EQ(parse_ref(format_ref(new_ref))->digest, new_ref.digest);
}

}  // namespace
}  // namespace kj::buildfarm
