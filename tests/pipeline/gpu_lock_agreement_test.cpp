// The GPU lock has two implementations, kjudged's (src/pipeline/run/gpu_lock.cpp: timed loops of
// native jobs, exclusive) and the trusted worker's (python/kjudge_worker/gpu_lock.py: exclusive
// around timed loops, shared around its other GPU work). They follow one protocol
// (docs/gpu-worker.md, "The GPU lock"): flock LOCK_EX on <lock>.turnstile, then LOCK_SH or LOCK_EX on
// <lock>, then the turnstile is released; closing <lock> releases. Here each side is held while
// the other asks, as real processes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "pipeline/run/gpu_lock.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// python3 holding the worker's lock (shared or not) for `hold` (seconds, or until a file of that
// name exists), or timing its own acquire: writes "asking" to `mark`.asking just before it asks,
// "ready" to `mark` once it holds the lock, and its wait in seconds to `waited`.
pid_t python_lock(const fs::path& lock, bool shared, const std::string& hold, const fs::path& mark,
                  const fs::path& waited) {
  const std::string code =
      "import os, sys, time; sys.path.insert(0, '" KJ_PYTHON_DIR "')\n"
      "from kjudge_worker.gpu_lock import GpuLock\n"
      "l = GpuLock(sys.argv[1], shared=sys.argv[2] == '1')\n"
      "open(sys.argv[3] + '.asking', 'w').write('asking'); w = l.acquire()\n"
      "open(sys.argv[4], 'w').write(str(w)); open(sys.argv[3], 'w').write('ready')\n"
      "hold = sys.argv[5]\n"
      "if hold.replace('.', '', 1).isdigit(): time.sleep(float(hold))\n"
      "else:\n"
      "    while not os.path.exists(hold): time.sleep(0.01)\n"
      "l.release()\n";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/usr/bin/python3", "python3", "-c", code.c_str(), lock.c_str(), shared ? "1" : "0", mark.c_str(),
            waited.c_str(), hold.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

pid_t python_lock(const fs::path& lock, bool shared, double hold_s, const fs::path& mark, const fs::path& waited) {
  return python_lock(lock, shared, std::to_string(hold_s), mark, waited);
}

bool wait_for_file(const fs::path& f, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (fs::exists(f)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

double read_double(const fs::path& f) {
  std::ifstream in(f);
  double x = -1;
  in >> x;
  return x;
}

class GpuLockAgreement : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gpulock-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    lock_ = dir_ / "gpu0.lock";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, lock_;
};

TEST_F(GpuLockAgreement, TheDaemonsExclusiveLockWaitsForTheWorkersSharedHolder) {
  const pid_t py = python_lock(lock_, true, 1.0, dir_ / "ready", dir_ / "waited");
  ASSERT_TRUE(wait_for_file(dir_ / "ready", 30)) << "the worker's lock was not taken";
  const auto t0 = Clock::now();
  {
    kj::GpuLock held(lock_);
    EXPECT_GT(std::chrono::duration<double>(Clock::now() - t0).count(), 0.5);
  }
  int status = 0;
  ::waitpid(py, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(GpuLockAgreement, TheWorkersSharedLockWaitsForTheDaemonsExclusiveHolder) {
  pid_t py = -1;
  {
    kj::GpuLock held(lock_);
    py = python_lock(lock_, true, 0.0, dir_ / "ready", dir_ / "waited");
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    EXPECT_FALSE(fs::exists(dir_ / "ready")) << "the worker took its shared lock during the daemon's timed loop";
  }
  ASSERT_TRUE(wait_for_file(dir_ / "ready", 30));
  EXPECT_GT(read_double(dir_ / "waited"), 0.2);  // the rest of the hold after python's start-up
  int status = 0;
  ::waitpid(py, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The turnstile: an exclusive request that waits behind shared holders holds the turnstile, so a
// shared request arriving after it waits too (the timed loop is not starved by a stream of them).
TEST_F(GpuLockAgreement, ASharedRequestQueuesBehindAWaitingExclusiveOne) {
  // Ordered by files, not by sleeps (python's start-up on a loaded machine took longer than any
  // fixed pause): the first shared holder holds until told; the daemon waits for it in the
  // turnstile; a second shared request that arrives then must not join the first holder.
  const pid_t first = python_lock(lock_, true, (dir_ / "release1").string(), dir_ / "ready1", dir_ / "waited1");
  ASSERT_TRUE(wait_for_file(dir_ / "ready1", 30));
  std::atomic<bool> exclusive_held{false};
  std::thread exclusive([&] {
    kj::GpuLock held(lock_);
    exclusive_held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the daemon is now waiting, in the turnstile
  const pid_t second = python_lock(lock_, true, 0.0, dir_ / "ready2", dir_ / "waited2");
  ASSERT_TRUE(wait_for_file(dir_ / "ready2.asking", 30));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its flock call is made by now
  EXPECT_FALSE(exclusive_held) << "the daemon took its lock while a shared holder held it";
  EXPECT_FALSE(fs::exists(dir_ / "ready2")) << "a shared request overtook the waiting exclusive one";
  std::ofstream(dir_ / "release1") << "go";
  exclusive.join();
  ASSERT_TRUE(wait_for_file(dir_ / "ready2", 30));
  for (pid_t p : {first, second}) {
    int status = 0;
    ::waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

}  // namespace
