// The cgroup control files' helpers and the hierarchy's discovery (cgroup_files.h):
//   v2 (a cgroup2 mount whose own cgroup offers the memory controller): job cgroups are
//      children of the caller's own cgroup, which must delegate memory/pids/cpu (subtree_control).
//   v1/hybrid: per controller (memory, pids, cpu, cpuacct, freezer) a child of the caller's
//      cgroup in that hierarchy.
#include "cgroup_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace kjsandbox::cgroup_detail {
namespace {
constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};
}  // namespace

std::string errno_text(int err) { return std::string(strerror(err)); }

bool write_text(const std::string& path, const std::string& text, int* err) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) *err = errno;
    return false;
  }
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    if (err) *err = n < 0 ? e : EIO;
    return false;
  }
  return true;
}

std::optional<std::string> read_text(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::optional<std::uint64_t> read_u64(const std::string& path) {
  auto t = read_text(path);
  if (!t) return std::nullopt;
  try {
    return std::stoull(*t);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<std::uint64_t> read_key(const std::string& path, const std::string& key) {
  auto t = read_text(path);
  if (!t) return std::nullopt;
  std::istringstream in(*t);
  std::string k;
  std::uint64_t v;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

std::nullptr_t no_cgroup(std::string* error, const std::string& what, int err) {
  *error = "cgroup: " + what + ": " + errno_text(err);
  return nullptr;
}

bool is_dir(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// rmdir fails with EBUSY while the cgroup still holds tasks (dying ones included): retry with a
// short, growing back-off (50 us .. 5 ms, about 1 s in all) instead of a fixed sleep.
bool remove_dir(const std::string& dir) {
  auto wait = std::chrono::microseconds(50);
  for (auto spent = std::chrono::microseconds(0); spent < std::chrono::seconds(1); spent += wait) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(wait);
    wait = std::min<std::chrono::microseconds>(wait * 2, std::chrono::milliseconds(5));
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

std::vector<ProcCgroup> proc_cgroups(const std::string& pid) {
  std::vector<ProcCgroup> out;
  std::ifstream in("/proc/" + pid + "/cgroup");
  for (std::string line; std::getline(in, line);) {  // id:controllers:path
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

std::vector<pid_t> procs_of(const std::string& dir) {
  std::vector<pid_t> out;
  auto t = read_text(dir + "/cgroup.procs");
  if (!t) return out;
  std::istringstream in(*t);
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

std::vector<std::string> subdirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  return out;
}

namespace {
Hierarchy discover() {
  Hierarchy h;
  // mountinfo: ... mount_point ... - fstype source super_options
  std::map<std::string, std::string> v1_mount;  // controller -> mount point
  std::string v2_mount;
  std::ifstream mi("/proc/self/mountinfo");
  for (std::string line; std::getline(mi, line);) {
    std::istringstream ss(line);
    std::vector<std::string> f;
    for (std::string w; ss >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (dash == f.end() || dash + 3 >= f.end() || f.size() < 5) continue;
    const std::string& mount_point = f[4];
    const std::string& fstype = *(dash + 1);
    if (fstype == "cgroup2" && v2_mount.empty()) v2_mount = mount_point;
    if (fstype == "cgroup") {
      std::istringstream opts(*(dash + 3));
      for (std::string o; std::getline(opts, o, ',');)
        for (const char* c : kV1Controllers)
          if (o == c && !v1_mount.count(c)) v1_mount[c] = mount_point;
    }
  }
  std::map<std::string, std::string> v1_path;
  std::string v2_path;
  for (const auto& [ctrls, path] : proc_cgroups("self")) {
    if (ctrls.empty()) v2_path = path;
    std::istringstream cs(ctrls);
    for (std::string c; std::getline(cs, c, ',');) v1_path[c] = path;
  }
  if (!v2_mount.empty()) {
    std::string own = v2_mount + (v2_path == "/" ? "" : v2_path);
    // A leaf we put ourselves into earlier: job cgroups are its siblings.
    auto slash = own.rfind('/');
    if (own.substr(slash + 1) == kSupervisor) own = own.substr(0, slash);
    auto ctrls = read_text(own + "/cgroup.controllers");
    if (ctrls && ctrls->find("memory") != std::string::npos) {
      h.v2 = true;
      h.v2_base = own;
      h.v2_mount = v2_mount;
      return h;
    }
  }
  for (const auto& [c, mount] : v1_mount) {
    std::string dir = mount + (v1_path.count(c) && v1_path[c] != "/" ? v1_path[c] : "");
    if (is_dir(dir) && ::access(dir.c_str(), W_OK) == 0) h.v1_base[c] = dir;
  }
  if (!h.v1_base.count("memory")) h.v1_base.clear();  // memory is the one we cannot do without
  if (!h.usable())
    h.why = v2_mount.empty() && v1_mount.empty() ? "no cgroup hierarchy mounted"
                                                 : "no writable cgroup with the memory controller";
  return h;
}
}  // namespace

Hierarchy& hierarchy_mut() {
  static Hierarchy h = discover();
  return h;
}
const Hierarchy& hierarchy() { return hierarchy_mut(); }

std::mutex& setup_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace kjsandbox::cgroup_detail
