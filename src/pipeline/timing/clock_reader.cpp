#include "pipeline/timing/clock_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "runner/clock_marks.h"

namespace kj {
namespace fs = std::filesystem;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

namespace {

// The kernel stamps on CLOCK_REALTIME; a mark's age on that clock, taken from steady_clock's now,
// puts it on the steady clock the checks use (a wall-clock step only matters inside that age).
steady_clock::time_point on_steady_clock(const timespec& sent) {
  const auto now = steady_clock::now();
  timespec real{};
  ::clock_gettime(CLOCK_REALTIME, &real);
  const nanoseconds age{(real.tv_sec - sent.tv_sec) * 1'000'000'000LL + (real.tv_nsec - sent.tv_nsec)};
  return now - std::max(age, nanoseconds(0));
}

// A datagram's send time (now without a stamp) and its sender's pid (0 without credentials).
struct Envelope {
  steady_clock::time_point at = steady_clock::now();
  pid_t pid = 0;
};
Envelope envelope_of(msghdr& msg) {
  Envelope e;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec sent{};
      std::memcpy(&sent, CMSG_DATA(c), sizeof(sent));
      e.at = on_steady_clock(sent);
    } else if (c->cmsg_type == SCM_CREDENTIALS) {
      ucred who{};
      std::memcpy(&who, CMSG_DATA(c), sizeof(who));
      e.pid = who.pid;
    }
  }
  return e;
}

// sun_path holds 107 bytes; a longer job dir is reached through /proc/self/fd/<its fd>.
void bind_unix(int fd, const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string name = path.string();
  int dir = -1;
  if (name.size() >= sizeof(addr.sun_path)) {
    dir = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) throw std::runtime_error("cannot open " + path.parent_path().string());
    name = fmt::format("/proc/self/fd/{}/{}", dir, path.filename().string());
  }
  std::memcpy(addr.sun_path, name.c_str(), std::min(name.size(), sizeof(addr.sun_path) - 1));
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  if (dir >= 0) ::close(dir);
  if (rc != 0) throw std::runtime_error(fmt::format("bind {} failed: {}", path.string(), std::strerror(err)));
}

}  // namespace

void drain_clock_socket(int fd, std::vector<ClockMark>& out, int* samples_left) {
  // A loop sends a few datagrams (marks batched: clock_marks.h); 64 KiB holds the largest.
  static thread_local std::vector<char> buf(64 * 1024);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(ucred))];
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const Envelope e = envelope_of(msg);
    bool sampled = false;
    for (ssize_t i = 0; i < n && out.size() < kMaxClockMarks; ++i) {
      const char event = buf[static_cast<std::size_t>(i)];
      out.push_back({event, e.at, std::nullopt});
      if ((event == 'S' || event == 'E') && e.pid > 0 && !sampled && *samples_left > 0) {
        sampled = true;
        --*samples_left;
        out.back().cpu = sample_cpu(e.pid);
        if (out.back().cpu) out.back().cpu->read_late_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(
            0, std::chrono::duration_cast<nanoseconds>(steady_clock::now() - e.at).count()));
      }
    }
  }
}

ClockReader::ClockReader(const fs::path& socket_path) : path_(socket_path) {
  fs::remove(path_);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(fmt::format("clock socket: {}", std::strerror(errno)));
  const int on = 1;
  try {
    if (::setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) != 0)
      throw std::runtime_error(fmt::format("SO_TIMESTAMPNS: {}", std::strerror(errno)));
    if (::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0)
      throw std::runtime_error(fmt::format("SO_PASSCRED: {}", std::strerror(errno)));
    bind_unix(fd_, path_);
    if (::chmod(path_.c_str(), 0622) != 0) throw std::runtime_error("chmod " + path_.string() + " failed");
  } catch (...) {
    ::close(fd_);
    throw;
  }
  reader_ = std::thread([this] {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      ::poll(&p, 1, 10);
      drain_clock_socket(fd_, got_, &samples_left_);
      if (done_.load()) {
        drain_clock_socket(fd_, got_, &samples_left_);  // whatever arrived meanwhile
        return;
      }
    }
  });
}

std::vector<ClockMark> ClockReader::finish() {
  if (reader_.joinable()) {
    done_ = true;
    reader_.join();
  }
  return std::move(got_);
}

ClockReader::~ClockReader() {
  finish();
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  fs::remove(path_, ec);
}

bool has_device_ready_mark(const std::vector<ClockMark>& marks) {
  return std::any_of(marks.begin(), marks.end(),
                     [](const ClockMark& m) { return m.event == kjudge::runner::kDeviceReadyMark; });
}

StepOutcome run_runner_clocked(const Config& cfg, const fs::path& job_dir, const fs::path& inputs_dir,
                               const kjudge::v1::RunnerRequest& request, std::uint32_t wall_ms,
                               std::uint64_t output_bytes, const std::string& device_profile,
                               const std::string& socket_name, std::vector<ClockMark>& marks) {
  ClockReader reader(job_dir / socket_name);
  StepOutcome step = run_runner(cfg, job_dir, inputs_dir, request, wall_ms, output_bytes, device_profile);
  marks = reader.finish();
  step.device_ready_mark = has_device_ready_mark(marks);
  return step;
}

}  // namespace kj
