// Shared helpers of the sandbox tests: policies, temp dirs, host process scans.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kjsandbox/sandbox.h"

namespace kjtest {

using namespace std::chrono_literals;

// The host uid/gid a sandbox runs as when the policy leaves them unset.
inline uid_t sandbox_host_uid() { return ::geteuid() == 0 ? 65534 : ::getuid(); }
inline gid_t sandbox_host_gid() { return ::geteuid() == 0 ? 65534 : ::getgid(); }

// A directory under /tmp owned by the sandbox's host uid (so the sandbox may write it); removed
// with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kjsandbox-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
    ::chmod(path_.c_str(), 0755);
    if (::geteuid() == 0 && ::chown(path_.c_str(), sandbox_host_uid(), sandbox_host_gid()) != 0)
      throw std::runtime_error("chown");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

inline kjsandbox::Policy policy_for(std::vector<std::string> argv) {
  kjsandbox::Policy p;
  p.argv = std::move(argv);
  p.binds = kjsandbox::default_system_binds();
  p.env = {{"PATH", "/usr/bin:/bin"}};
  p.wall_limit = 10s;
  return p;
}

inline kjsandbox::Policy shell(const std::string& script) {
  return policy_for({"/bin/sh", "-c", script});
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

// Host pids whose command line has `arg` as one of its arguments.
inline std::vector<pid_t> host_pids_with_arg(const std::string& arg) {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::string cmdline = read_file(std::string("/proc/") + e->d_name + "/cmdline");
    std::size_t pos = 0;
    while (pos < cmdline.size()) {
      std::size_t z = cmdline.find('\0', pos);
      if (z == std::string::npos) z = cmdline.size();
      if (cmdline.compare(pos, z - pos, arg) == 0 && z - pos == arg.size()) {
        pids.push_back(static_cast<pid_t>(pid));
        break;
      }
      pos = z + 1;
    }
  }
  ::closedir(d);
  return pids;
}

// A sleep(1) argument nobody else on the host uses ("<pid><n>.5" seconds).
inline std::string unique_sleep_arg() {
  static std::atomic<int> n{0};
  return std::to_string(::getpid()) + std::to_string(100 + n++) + ".5";
}

// Skips the test where the host cannot create the namespaces.
class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kjsandbox::namespaces_available(&why)) GTEST_SKIP() << "no namespaces: " << why;
  }
};

}  // namespace kjtest
