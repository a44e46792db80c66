#include "daemon/dev_redis.h"

#include <boost/process/io.hpp>
#include <boost/process/search_path.hpp>
#include <csignal>
#include <stdexcept>
#include <thread>

#include "common/log.h"
#include "kjqueue/queue.h"

namespace kj {
namespace bp = boost::process;

DevRedis::DevRedis(const std::filesystem::path& dir) : socket_(dir / "redis.sock") {
  std::filesystem::create_directories(dir);
  // Others may pass through (sandboxes reach job dirs under <dir>/state as an unprivileged uid)
  // but not list it; the socket itself is 0700.
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                        std::filesystem::perms::others_exec);
  std::filesystem::remove(socket_);
  auto exe = bp::search_path("redis-server");
  if (exe.empty()) throw std::runtime_error("--dev needs redis-server on PATH (scripts/setup installs it)");
  child_ = bp::child(exe, "--port", "0", "--unixsocket", socket_.string(), "--unixsocketperm", "700", "--save", "",
                     "--appendonly", "no", "--dir", dir.string(), "--logfile", (dir / "redis.log").string(),
                     bp::std_out > bp::null, bp::std_err > bp::null);
  for (int i = 0; i < 200; ++i) {  // up to 10 s
    if (!child_.running()) throw std::runtime_error("redis-server exited at start; see " + (dir / "redis.log").string());
    try {
      kjqueue::Endpoint ep;
      ep.url = url();
      kjqueue::Queue probe(ep);
      probe.command({"PING"});
      log::info("dev.redis_started", {{"socket", socket_.string()}, {"pid", child_.id()}});
      return;
    } catch (const kjqueue::QueueError&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  throw std::runtime_error("redis-server did not answer on " + socket_.string());
}

DevRedis::~DevRedis() {
  if (child_.running()) {
    ::kill(child_.id(), SIGTERM);
    std::error_code ec;
    child_.wait(ec);
  }
  std::error_code ec;
  std::filesystem::remove(socket_, ec);
  log::info("dev.redis_stopped");
}

}  // namespace kj
