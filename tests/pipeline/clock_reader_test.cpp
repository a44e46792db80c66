// The daemon's clock: marks stamped when sent, whenever the daemon reads them.
#include "pipeline/timing/clock_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>

#include "pipeline/timing/loop_marks.h"
#include "runner/clock_marks.h"

namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The clock socket as a datagram pair: the daemon's end with the options given (those the reader
// sets), the sender's end; drain() reads what has arrived, as the reader does.
struct ClockPair {
  int fds[2] = {-1, -1};
  int samples = kj::kMaxCpuSamples;
  std::vector<kj::ClockMark> marks;
  explicit ClockPair(std::initializer_list<int> options) {
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
    const int on = 1;
    for (int option : options)
      if (::setsockopt(fds[0], SOL_SOCKET, option, &on, sizeof(on)) != 0) throw std::runtime_error("setsockopt");
  }
  ~ClockPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  ClockPair(const ClockPair&) = delete;
  ClockPair& operator=(const ClockPair&) = delete;
  ssize_t send(const std::string& bytes) { return ::send(fds[1], bytes.data(), bytes.size(), 0); }
  void drain() { kj::drain_clock_socket(fds[0], marks, &samples); }
};

// The flaw this replaces: a reader that stamps bytes when it reads them saw 0 ms here, and a
// reader delayed on a loaded host stretched a loop's span by its delay (a false SUSPICIOUS).
TEST(ClockReader, AMarkKeepsItsSendTimeHoweverLateItIsRead) {
  ClockPair clock({SO_TIMESTAMPNS});
  ASSERT_EQ(clock.send("S"), 1);
  std::this_thread::sleep_for(120ms);
  ASSERT_EQ(clock.send("TTE"), 3);
  std::this_thread::sleep_for(300ms);  // the reader is late
  clock.drain();
  const auto& marks = clock.marks;
  ASSERT_EQ(marks.size(), 4u);
  EXPECT_EQ(std::string({marks[0].event, marks[1].event, marks[2].event, marks[3].event}), "STTE");
  const auto loops = kj::timed_loops(marks);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].calls, 2u);
  EXPECT_GE(loops[0].span_ms, 119.0);
  EXPECT_LT(loops[0].span_ms, 250.0);  // not the 420 ms a late reader's own clock would add
}

// The kernel names the sender of each datagram (SO_PASSCRED): the loop's start and end marks carry
// a sample of the sender's scheduling, the calls' marks none. This process is in no job cgroup,
// so the job's CPU time is unknown (and no wait would be excused).
TEST(ClockReader, TheLoopsEndsCarryASampleOfTheSender) {
  ClockPair clock({SO_TIMESTAMPNS, SO_PASSCRED});
  ASSERT_EQ(clock.send("S"), 1);
  ASSERT_EQ(clock.send("TE"), 2);
  clock.drain();
  const auto& marks = clock.marks;
  ASSERT_EQ(marks.size(), 3u);
  ASSERT_TRUE(marks[0].cpu && marks[2].cpu);
  EXPECT_FALSE(marks[1].cpu);
  EXPECT_GT(marks[2].cpu->exec_ns, 0u);
  EXPECT_GE(marks[2].cpu->exec_ns, marks[0].cpu->exec_ns);
  EXPECT_FALSE(marks[2].cpu->job_cpu_ns);
}

// A candidate's process can reach the socket too: a flood is read and dropped past the bound, so
// it costs the daemon no more memory than a legitimate loop's marks.
TEST(ClockReader, AFloodOfMarksIsBounded) {
  ClockPair clock({});
  const std::string chunk(60'000, 'T');
  for (int i = 0; i < 4; ++i) {  // 240,000 bytes, drained as they come
    ASSERT_EQ(clock.send(chunk), static_cast<ssize_t>(chunk.size()));
    clock.drain();
  }
  EXPECT_EQ(clock.marks.size(), kj::kMaxClockMarks);
}

// A candidate flooding the socket with loop starts costs the daemon at most kMaxCpuSamples reads of
// /proc, and one per datagram: the marks are kept, the samples stop.
TEST(ClockReader, AFloodOfLoopStartsIsSampledAFewTimesOnly) {
  ClockPair clock({SO_PASSCRED});
  const std::string many_starts(1000, 'S');
  for (int i = 0; i < 40; ++i) {  // drained as they come, as the reader does
    ASSERT_EQ(clock.send(many_starts), 1000);
    clock.drain();
  }
  const auto& marks = clock.marks;
  EXPECT_EQ(marks.size(), 40'000u);
  EXPECT_EQ(std::count_if(marks.begin(), marks.end(), [](const kj::ClockMark& m) { return m.cpu.has_value(); }),
            kj::kMaxCpuSamples);
  EXPECT_EQ(clock.samples, 0);
}

// The runner's writer and the daemon's reader on a job dir whose path is longer than a unix
// socket address holds (the reader binds through /proc/self/fd).
TEST(ClockReader, TheRunnersMarksArriveInOrderWithTimedCallsBatched) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("kj-clock-" + std::string(120, 'x'));
  fs::create_directories(dir);
  const fs::path sock = dir / "clock";
  std::vector<kj::ClockMark> marks;
  {
    kj::ClockReader reader(sock);
    EXPECT_EQ(fs::status(sock).permissions() & fs::perms::all, fs::perms(0622));
    {
      // The sandbox sees the socket at a short path; a symlink stands in for its bind mount.
      const fs::path short_dir = fs::path("/tmp") / ("kjc." + std::to_string(::getpid()));
      fs::remove(short_dir);
      fs::create_directory_symlink(dir, short_dir);
      kjudge::runner::ClockMarks clock((short_dir / "clock").string());
      clock.mark(kjudge::runner::kDeviceReadyMark);
      clock.mark('S');
      for (int i = 0; i < 1000; ++i) clock.mark('T');
      std::this_thread::sleep_for(50ms);
      clock.mark('E');
      fs::remove(short_dir);
    }
    marks = reader.finish();
  }
  fs::remove_all(dir);
  ASSERT_EQ(marks.size(), 1003u);
  EXPECT_TRUE(kj::has_device_ready_mark(marks));
  const auto loops = kj::timed_loops(marks);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].calls, 1000u);
  EXPECT_GE(loops[0].span_ms, 49.0);
  EXPECT_EQ(marks[2].at, marks[1002].at);  // the calls' marks went with 'E': one datagram
  EXPECT_FALSE(fs::exists(sock));
}

}  // namespace
