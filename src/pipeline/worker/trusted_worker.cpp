#include "pipeline/worker/trusted_worker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/log.h"
#include "pipeline/run/gpu_lock.h"
#include "pipeline/run/harness_step.h"
#include "pipeline/run/pipeline_util.h"
#include "pipeline/run/sandbox_watch.h"

namespace kj {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t kWorkerLifetimeMs = 24u * 3600 * 1000;  // then replaced (idle exit comes first)
constexpr const char* kLockInSandbox = "/locks/gpu.lock";

// Through an O_PATH fd of its directory: a socket path is limited to 107 bytes, a state dir is not.
int connect_to(const fs::path& dir, const char* name) {
  const int dfd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, name);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(dfd);
  if (!ok && fd >= 0) ::close(fd);
  return ok ? fd : -1;
}

bool send_all(int fd, const std::string& s) {
  for (std::size_t off = 0; off < s.size();) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// One line (the reply) before the deadline, which `later` (when given) may move on when it comes;
// nullopt on timeout or a closed socket.
std::optional<std::string> read_line(int fd, Clock::time_point& deadline,
                                     const std::function<Clock::time_point()>& later) {
  std::string got;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 && later) {
      deadline = std::max(deadline, later());
      left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    }
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    got.append(buf, static_cast<std::size_t>(n));
    if (auto nl = got.find('\n'); nl != std::string::npos) return got.substr(0, nl);
  }
}

}  // namespace

TrustedWorker::TrustedWorker(const Config& cfg, fs::path dir, bool gpu) : dir_(std::move(dir)) {
  cancel_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (cancel_fd_ < 0) throw std::runtime_error("eventfd for the trusted worker failed");
  fs::remove(dir_ / "control.sock");
  thread_ = std::thread([this, cfg, gpu] { supervise(cfg, gpu); });
}

TrustedWorker::~TrustedWorker() {
  kill();
  if (thread_.joinable()) thread_.join();
  ::close(cancel_fd_);
  std::error_code ec;
  fs::remove_all(dir_, ec);  // its sockets, references and clock sockets: nothing outlives the worker
}

void TrustedWorker::kill() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(cancel_fd_, &one, sizeof one);
}

void TrustedWorker::supervise(const Config& cfg, bool gpu) {
  HarnessRun run;
  run.role = "worker";
  run.slot = SlotKind::Run;
  run.job_dir = dir_;
  run.wall_ms = kWorkerLifetimeMs;
  run.output_bytes = 1 << 20;
  run.device_profile = gpu ? "nvidia-cuda" : "";
  run.file_size_bytes = 1ull << 30;
  std::string lock_arg;
  if (gpu) {
    const fs::path lock = gpu_lock_file(cfg);
    fs::create_directories(lock.parent_path());
    for (const std::string suffix : {"", ".turnstile"}) {  // the lock and the gate in front of it
      const fs::path f = lock.string() + suffix;
      std::ofstream(f, std::ios::app).close();  // exists, and openable by the sandbox's user
      fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
      run.binds.push_back({f.string(), std::string(kLockInSandbox) + suffix, true});
    }
    lock_arg = kLockInSandbox;
  }
  kjsandbox::Policy p = harness_policy(
      cfg, run,
      {cfg.kernelbench.python.string(), "-s", "-m", "kjudge_worker", "/job", gpu ? "cuda" : "cpu", lock_arg,
       fmt::format("{}", cfg.kernelbench.worker_cache_fraction), std::to_string(cfg.kernelbench.worker_idle_seconds),
       fmt::format("{}", gpu ? 0.0 : cfg.kernelbench.cpu_rehearsal_device_gib)});
  p.cancel_fd = cancel_fd_;
  log::info("worker.start", {{"dir", dir_.string()}, {"gpu", gpu}});
  const kjsandbox::Report rep = kjsandbox::run(p);
  exit_detail_ = fmt::format("{} (exit {}, signal {}): {}", kjsandbox::to_string(rep.outcome), rep.exit_code,
                             rep.signal, tail(rep.stderr_data, 1500));
  alive_ = false;
  log::info("worker.exit", {{"dir", dir_.string()}, {"how", exit_detail_}});
}

std::optional<json> TrustedWorker::request(const json& req, std::chrono::milliseconds timeout, std::string* why,
                                           const Extension& extension) {
  const auto sent = Clock::now();
  auto deadline = sent + timeout;
  int fd = -1;
  while ((fd = connect_to(dir_, "control.sock")) < 0) {  // still importing torch, or gone
    if (!alive_ || Clock::now() > deadline) {
      if (why) *why = alive_ ? "the trusted worker did not start in time" : "the trusted worker exited: " + exit_detail_;
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::optional<std::string> line;
  std::function<Clock::time_point()> later;
  if (extension) later = [&] { return sent + timeout + extension(); };
  if (send_all(fd, req.dump() + "\n")) line = read_line(fd, deadline, later);
  ::close(fd);
  if (!line) {
    const bool timed_out = Clock::now() >= deadline;
    for (int i = 0; i < 40 && alive_ && !timed_out; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (why)
      *why = !alive_ ? "the trusted worker exited: " + exit_detail_
                     : timed_out ? fmt::format("no answer from the trusted worker within {} ms",
                                               std::chrono::duration_cast<std::chrono::milliseconds>(deadline - sent).count())
                                 : "the trusted worker closed the connection without an answer";
    return std::nullopt;
  }
  auto parsed = json::parse(*line, nullptr, false);
  if (!parsed.is_object()) {
    if (why) *why = "the trusted worker's answer is not a JSON object";
    return std::nullopt;
  }
  return parsed;
}

}  // namespace kj
