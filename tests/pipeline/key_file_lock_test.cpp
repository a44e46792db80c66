// KeyFileLock (common/key_file_lock.h): one holder per file across open file descriptions (as
// across processes); a waiter gets it when the holder lets go, or gives up on cancel or its bound.
#include "common/key_file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

namespace kj {
namespace {

using Clock = std::chrono::steady_clock;

struct LockFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kjkeylock-" + std::to_string(::getpid()) + ".lock");
  ~LockFile() { std::filesystem::remove(path); }
};

TEST(KeyFileLock, TheSecondWaitsForTheFirst) {
  LockFile f;
  auto first = std::make_unique<KeyFileLock>(f.path, -1, Clock::time_point::max());
  ASSERT_EQ(first->result(), KeyFileLock::Result::Held);
  EXPECT_FALSE(first->contended());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first.reset();
  });
  const KeyFileLock second(f.path, -1, Clock::time_point::max());
  release.join();
  EXPECT_EQ(second.result(), KeyFileLock::Result::Held);
  EXPECT_TRUE(second.contended());
  EXPECT_GT(second.seconds_waited(), 0.2);
}

TEST(KeyFileLock, CancelAndBoundEndTheWait) {
  LockFile f;
  const KeyFileLock held(f.path, -1, Clock::time_point::max());
  const KeyFileLock bounded(f.path, -1, Clock::now() + std::chrono::milliseconds(100));
  EXPECT_EQ(bounded.result(), KeyFileLock::Result::TimedOut);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  const KeyFileLock cancelled(f.path, fds[0], Clock::time_point::max());
  EXPECT_EQ(cancelled.result(), KeyFileLock::Result::Cancelled);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace kj
