// The node's build places (pipeline/build/slots.h): sized from CPUs and memory unless configured,
// handed out in arrival order, never more at once than the limit; a cancel ends a wait.
#include "pipeline/build/slots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace kj {
namespace {

TEST(BuildSlots, SizedFromCpusAndMemory) {
  Config c;
  c.sandbox.compile_memory_bytes = 4ull << 30;
  EXPECT_EQ(build_concurrency_for(16, 128ull << 30, c), 8u);  // 2 CPUs a build: load_inline's two compiles
  EXPECT_EQ(build_concurrency_for(16, 16ull << 30, c), 4u);   // memory: 4 GiB a build
  EXPECT_EQ(build_concurrency_for(2, 64ull << 30, c), 1u);
  EXPECT_EQ(build_concurrency_for(1, 1ull << 30, c), 1u);     // never none
  c.sandbox.compile_cpus = 4.0;
  EXPECT_EQ(build_concurrency_for(16, 128ull << 30, c), 4u);
  c.build.concurrency = 3;
  EXPECT_EQ(build_concurrency_for(16, 128ull << 30, c), 3u);  // the operator's figure wins
}

TEST(BuildSlots, OneAtATimeInArrivalOrderAndACancelEndsTheWait) {
  Config c;
  c.build.concurrency = 1;  // the process's limit is set by its first build
  std::vector<int> order;
  std::mutex mu;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> builds;
  {
    const BuildSlot first(c, -1);
    ASSERT_FALSE(first.cancelled());
    for (int i = 0; i < 4; ++i) {
      builds.emplace_back([&, i] {
        const BuildSlot s(c, -1);
        most = std::max(most.load(), ++inside);
        {
          std::lock_guard lk(mu);
          order.push_back(i);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        --inside;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // each in line before the next
    }
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    const BuildSlot cancelled(c, fds[0]);  // queued behind the others, then cancelled
    EXPECT_TRUE(cancelled.cancelled());
    ::close(fds[0]);
    ::close(fds[1]);
  }
  for (auto& t : builds) t.join();
  EXPECT_EQ(most, 1);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace kj
