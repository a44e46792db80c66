// pipeline/run/host_fault.h on a real filesystem: a tmpfs mounted for the test (root only), filled up.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline/run/host_fault.h"

namespace {
namespace fs = std::filesystem;

class HostFault : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounts a tmpfs: needs root";
    // In a mount namespace of this test process's own: the host's mount table never shows the
    // tmpfs (the adversarial tests, running beside this under ctest -j, compare it before/after).
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << strerror(errno);
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << strerror(errno);
    char tmpl[] = "/tmp/kjhostfault.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    mnt_ = tmpl;
    ASSERT_EQ(::mount("kjhostfault", mnt_.c_str(), "tmpfs", 0, "size=8m,nr_inodes=4096"), 0) << strerror(errno);
    job_ = mnt_ / "jobs" / "j-1" / "candidate";
    fs::create_directories(job_);
  }
  void TearDown() override {
    if (mnt_.empty()) return;
    ::umount2(mnt_.c_str(), MNT_DETACH);
    fs::remove(mnt_);
  }
  // Writes into `file` until the filesystem refuses.
  static void fill(const fs::path& file) {
    std::ofstream out(file, std::ios::binary);
    const std::string mib(1 << 20, 'x'), kib(1024, 'x');
    while (out.write(mib.data(), mib.size()).flush()) {}
    out.clear();
    while (out.write(kib.data(), kib.size()).flush()) {}
  }
  fs::path mnt_, job_;
  kj::LimitsConfig limits_;
};

TEST_F(HostFault, RoomyFilesystemIsNoFault) {
  EXPECT_FALSE(kj::host_fault_after_step(job_, limits_));
  limits_.min_free_bytes = 1 << 20;
  limits_.min_free_inodes = 100;
  EXPECT_FALSE(kj::check_free_space(mnt_, limits_));
}

TEST_F(HostFault, FilledByOthersIsTheHostsFault) {
  fill(mnt_ / "someone-elses");
  const auto why = kj::host_fault_after_step(job_, limits_);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("filesystem is full"), std::string::npos) << *why;
}

TEST_F(HostFault, FilledByTheJobItselfIsNot) {
  fill(job_ / "mine");
  EXPECT_FALSE(kj::host_fault_after_step(job_, limits_));
}

TEST_F(HostFault, OutOfInodesIsTheHostsFault) {
  fs::create_directories(mnt_ / "others");
  for (int i = 0;; ++i)
    if (!std::ofstream(mnt_ / "others" / std::to_string(i))) break;
  EXPECT_TRUE(kj::host_fault_after_step(job_, limits_));
}

TEST_F(HostFault, FreeSpaceBelowTheConfiguredMinimumRefusesTheJob) {
  limits_.min_free_bytes = 64ull << 20;  // more than the 8 MiB tmpfs has
  const auto why = kj::check_free_space(mnt_, limits_);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("min_free_bytes"), std::string::npos) << *why;
  limits_.min_free_bytes = 0;
  limits_.min_free_inodes = 1'000'000;
  EXPECT_NE(kj::check_free_space(mnt_, limits_)->find("min_free_inodes"), std::string::npos);
}

}  // namespace
