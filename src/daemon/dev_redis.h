// Single-node dev mode: kjudged starts its own redis-server on a unix socket inside a private
// runtime directory (0700), with persistence off, and stops it on exit.
#pragma once

#include <boost/process/child.hpp>
#include <filesystem>
#include <string>

namespace kj {

class DevRedis {
 public:
  explicit DevRedis(const std::filesystem::path& runtime_dir);
  ~DevRedis();
  DevRedis(const DevRedis&) = delete;
  DevRedis& operator=(const DevRedis&) = delete;

  std::string url() const { return "unix://" + socket_.string(); }
  int pid() const { return child_.id(); }

 private:
  std::filesystem::path socket_;
  boost::process::child child_;
};

}  // namespace kj
