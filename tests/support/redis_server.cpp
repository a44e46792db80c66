#include "redis_server.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kjtest {
namespace {

std::string server_binary() {
  const char* env = std::getenv("KJUDGE_REDIS_SERVER");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/redis-server";
}

bool answers_ping(const std::filesystem::path& socket) {
  timeval tv{0, 200 * 1000};
  redisContext* c = redisConnectUnixWithTimeout(socket.c_str(), tv);
  if (c == nullptr) return false;
  bool ok = false;
  if (c->err == 0) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = r != nullptr && r->type == REDIS_REPLY_STATUS && std::string(r->str, r->len) == "PONG";
    if (r != nullptr) freeReplyObject(r);
  }
  redisFree(c);
  return ok;
}

}  // namespace

RedisServer::RedisServer() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kjredis.XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  socket_ = dir_ / "redis.sock";
  try {
    start();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

RedisServer::~RedisServer() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string RedisServer::url() const { return "unix://" + socket_.string(); }

kjqueue::Endpoint RedisServer::endpoint() const {
  kjqueue::Endpoint ep;
  ep.url = url();
  return ep;
}

std::string RedisServer::log() const {
  std::ifstream in(dir_ / "redis.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void RedisServer::start() {
  if (pid_ > 0) return;
  std::error_code ec;
  std::filesystem::remove(socket_, ec);
  const std::string bin = server_binary();
  std::vector<std::string> args = {bin,
                                   "--port", "0",
                                   "--unixsocket", socket_.string(),
                                   "--unixsocketperm", "700",
                                   "--dir", dir_.string(),
                                   "--logfile", (dir_ / "redis.log").string(),
                                   "--save", "",
                                   "--appendonly", "no",
                                   "--daemonize", "no"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Dies with the test (even when it crashes); only async-signal-safe calls from here on.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  pid_ = pid;
  wait_ready();
}

void RedisServer::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited during start-up (status " + std::to_string(status) +
                               "); log:\n" + log());
    }
    if (answers_ping(socket_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  throw std::runtime_error("redis-server did not answer PING within 10 s; log:\n" + log());
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  std::error_code ec;
  std::filesystem::remove(socket_, ec);
}

void RedisServer::restart() {
  stop();
  start();
}

}  // namespace kjtest
