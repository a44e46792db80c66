#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/config.h"

namespace {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kjcfg-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

TEST(Config, DefaultsWithoutAFile) {
  auto c = kj::load_config(std::nullopt);
  EXPECT_FALSE(c.node.empty());
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(c.result_ttl, std::chrono::hours(24));
}

TEST(Config, FileThenDropInsInNameOrder) {
  TempDir d;
  write(d.path / "kjudged.toml", "[daemon]\nworkers = 4\nnode = \"n1\"\n[redis]\nurl = \"unix:///x.sock\"\n");
  fs::create_directories(d.path / "kjudged.toml.d");
  write(d.path / "kjudged.toml.d" / "10-a.toml", "[daemon]\nworkers = 6\n");
  write(d.path / "kjudged.toml.d" / "20-b.toml", "[daemon]\nworkers = 8\n[limits]\nrun_wall_ms = 500\n");
  auto c = kj::load_config(d.path / "kjudged.toml");
  EXPECT_EQ(c.workers, 8u);
  EXPECT_EQ(c.node, "n1");
  EXPECT_EQ(c.redis.url, "unix:///x.sock");
  EXPECT_EQ(c.limits.run_wall_ms, 500u);
}

TEST(Config, BadValuesNameTheFile) {
  TempDir d;
  write(d.path / "bad.toml", "[daemon]\nworkers = 0\n");
  try {
    kj::load_config(d.path / "bad.toml");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("workers"), std::string::npos);
  }
  write(d.path / "syntax.toml", "[daemon\n");
  EXPECT_THROW(kj::load_config(d.path / "syntax.toml"), std::runtime_error);
}

}  // namespace
