// Shared helpers of the sandbox tests: policies, temp dirs, host process scans.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
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

// Mount point of each cgroup hierarchy: "memory", "pids", ... (v1) and "" (v2), from mountinfo.
inline std::map<std::string, std::string> cgroup_mounts() {
  std::map<std::string, std::string> out;
  for (const auto& line : lines(read_file("/proc/self/mountinfo"))) {
    std::istringstream ss(line);
    std::vector<std::string> f;
    for (std::string w; ss >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (dash == f.end() || dash + 3 >= f.end() || f.size() < 5) continue;
    if (*(dash + 1) == "cgroup2" && !out.count("")) out[""] = f[4];
    if (*(dash + 1) != "cgroup") continue;
    std::istringstream opts(*(dash + 3));
    for (std::string o; std::getline(opts, o, ',');)
      if (!out.count(o)) out[o] = f[4];
  }
  return out;
}

// The job cgroup directories (every hierarchy) a host process is in.
inline std::vector<std::string> job_cgroup_dirs(pid_t pid) {
  std::vector<std::string> out;
  const auto mounts = cgroup_mounts();
  for (const auto& line : lines(read_file("/proc/" + std::to_string(pid) + "/cgroup"))) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path.find("/kjsbx-") == std::string::npos) continue;
    std::istringstream cs(ctrls);
    std::string first;
    std::getline(cs, first, ',');
    auto m = mounts.find(ctrls.empty() ? "" : first);
    if (m != mounts.end()) out.push_back(m->second + path);
  }
  return out;
}

// Waits until a host process has `arg` in its command line; its pid, or 0 after 5 s.
inline pid_t wait_for_host_process(const std::string& arg) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    auto pids = host_pids_with_arg(arg);
    if (!pids.empty()) return pids[0];
    std::this_thread::sleep_for(10ms);
  }
  return 0;
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
