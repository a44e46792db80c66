#include "runner/clock_marks.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kjudge::runner {

ClockMarks::ClockMarks(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) return;
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

ClockMarks::~ClockMarks() {
  send_held();
  if (fd_ >= 0) ::close(fd_);
}

void ClockMarks::mark(char c) {
  held_.push_back(c);
  if (c != 'T') send_held();
}

void ClockMarks::send_held() {
  if (fd_ < 0 || held_.empty()) return;
  for (int tries = 0; tries < 2; ++tries) {
    if (::send(fd_, held_.data(), held_.size(), MSG_NOSIGNAL) >= 0) break;
    if (errno != EAGAIN && errno != EINTR) break;
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, 1000);
  }
  held_.clear();
}

}  // namespace kjudge::runner
