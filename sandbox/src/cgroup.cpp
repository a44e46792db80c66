// Job cgroups. The hierarchy is discovered once from /proc/self/mountinfo and /proc/self/cgroup:
//   v2 (a cgroup2 mount whose own cgroup offers the memory controller): job cgroups are
//      children of the caller's own cgroup, which must delegate memory/pids/cpu (subtree_control);
//      cleanup_stale_cgroups() arranges that by moving the caller into a leaf when needed.
//   v1/hybrid: per controller (memory, pids, cpu, cpuacct, freezer) a child of the caller's
//      cgroup in that hierarchy.
// Names: kjsbx-<creator pid>-<n>, so a later process can tell leftovers of a dead one.
#include "cgroup.h"
#include "zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace kjsandbox {
namespace {

constexpr std::uint64_t kUnlimited = ~0ull;
constexpr const char* kPrefix = "kjsbx-";
constexpr const char* kSupervisor = "kjsbx-supervisor";
constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};

std::string errno_text(int err) { return std::string(strerror(err)); }

bool write_text(const std::string& path, const std::string& text, int* err = nullptr) {
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

// "key value" lines (memory.events, cpu.stat, memory.oom_control).
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

bool is_dir(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct Hierarchy {
  bool v2 = false;
  std::string v2_base;                          // v2: the directory job cgroups go in
  std::string v2_mount;                         // v2: the hierarchy's mount point (its top)
  std::map<std::string, std::string> v1_base;   // v1: controller -> directory
  std::string why;                              // when neither is usable
  bool usable() const { return v2 || !v1_base.empty(); }
};

std::mutex g_mu;

// v1: idle job cgroups for reuse (JobCgroup::recycle): one mkdir/rmdir per hierarchy and the
// kernel's teardown of each were ~0.4 ms of CPU per launch.
constexpr std::size_t kPoolMax = 32;
constexpr std::uint64_t kPoolMaxResidue = 8ull << 20;
std::mutex g_pool_mu;
pid_t g_pool_owner = 0;  // a forked child must not use (or remove) its parent's pooled cgroups
// Never destroyed (threads may still recycle into it while the process exits); the idle ones are
// removed at exit by an atexit handler registered with the first.
std::vector<std::unique_ptr<JobCgroup>>& g_pool = *new std::vector<std::unique_ptr<JobCgroup>>;

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
  // /proc/self/cgroup: id:controllers:path
  std::map<std::string, std::string> v1_path;
  std::string v2_path;
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
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

// Discovered once. On v2 setup_cgroups() may move the base (a subtree of our own) before any job.
Hierarchy& hierarchy_mut() {
  static Hierarchy h = discover();
  return h;
}
const Hierarchy& hierarchy() { return hierarchy_mut(); }

bool g_v2_ready = false;  // v2: job cgroups can be made under hierarchy().v2_base (under g_mu)

// v2: our own cgroup must delegate the controllers to its children; it cannot while it holds
// processes (the "no internal processes" rule), so we move into a leaf first when needed.
bool prepare_v2(const Hierarchy& h, std::string* error) {
  if (g_v2_ready) return true;
  // Ask only for controllers the parent offers: enabling an absent one fails with ENOENT (seen on
  // a GPU node whose cgroup offers memory and pids but not cpu).
  const auto offered = read_text(h.v2_base + "/cgroup.controllers").value_or("");
  std::string want;
  for (const char* c : {"memory", "pids", "cpu"})
    if (offered.find(c) != std::string::npos) want += std::string(want.empty() ? "+" : " +") + c;
  auto have = read_text(h.v2_base + "/cgroup.subtree_control").value_or("");
  auto enabled = [&](const std::string& sc) {
    return sc.find("memory") != std::string::npos && sc.find("pids") != std::string::npos;
  };
  if (!enabled(have)) {
    int err = 0;
    if (!write_text(h.v2_base + "/cgroup.subtree_control", want, &err)) {
      if (err != EBUSY) {
        *error = "enable controllers in " + h.v2_base + ": " + errno_text(err);
        return false;
      }
      const std::string leaf = h.v2_base + "/" + kSupervisor;
      if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
        *error = "mkdir " + leaf + ": " + errno_text(errno);
        return false;
      }
      // Every process of our cgroup that is us goes (and our zygote, if it runs already); other
      // processes there make this fail.
      int zygote = 0;
      zygote_ready(&zygote);
      if (zygote > 0) write_text(leaf + "/cgroup.procs", std::to_string(zygote));
      if (!write_text(leaf + "/cgroup.procs", std::to_string(::getpid()), &err) ||
          !write_text(h.v2_base + "/cgroup.subtree_control", want, &err)) {
        *error = "delegate controllers from " + h.v2_base + ": " + errno_text(err);
        return false;
      }
    }
  }
  g_v2_ready = true;
  return true;
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

std::vector<pid_t> procs_of(const std::string& dir) {
  std::vector<pid_t> out;
  auto t = read_text(dir + "/cgroup.procs");
  if (!t) return out;
  std::istringstream in(*t);
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

// v1: pids.current when there is a pids hierarchy (reading cgroup.procs builds a pid list that
// a kworker tears down later), else cgroup.procs.
bool v1_empty(const std::string& pids_dir, const std::string& any) {
  if (!pids_dir.empty())
    if (auto n = read_u64(pids_dir + "/pids.current")) return *n == 0;
  return procs_of(any).empty();
}

void kill_v1(const std::string& freezer, const std::string& any, const std::string& pids_dir = {}) {
  if (v1_empty(pids_dir, any)) return;  // the usual case after init is gone: nothing to freeze
  const bool frozen = !freezer.empty() && write_text(freezer + "/freezer.state", "FROZEN");
  if (frozen)
    for (int i = 0; i < 100; ++i) {
      auto s = read_text(freezer + "/freezer.state");
      if (!s || s->rfind("FROZEN", 0) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  for (int round = 0; round < 10; ++round) {
    auto pids = procs_of(any);
    if (pids.empty()) break;
    for (pid_t p : pids) ::kill(p, SIGKILL);
    if (frozen) write_text(freezer + "/freezer.state", "THAWED");
    std::this_thread::sleep_for(std::chrono::microseconds(round ? 500 << std::min(round, 3) : 0));
  }
  if (frozen) write_text(freezer + "/freezer.state", "THAWED");
}

}  // namespace

std::unique_ptr<JobCgroup> JobCgroup::create(const CgroupLimits& limits, std::string* error) {
  const Hierarchy& h = hierarchy();
  if (!h.usable()) return nullptr;
  static std::atomic<unsigned> counter{0};
  const std::string name = std::string(kPrefix) + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::unique_ptr<JobCgroup> cg(new JobCgroup());
  auto fail = [&](const std::string& what, int err) {
    *error = "cgroup: " + what + ": " + errno_text(err);
    return nullptr;
  };
  int err = 0;
  if (h.v2) {
    {
      std::lock_guard lock(g_mu);
      if (!prepare_v2(h, error)) return nullptr;
    }
    cg->v2_ = true;
    const std::string dir = h.v2_base + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) return fail("mkdir " + dir, errno);
    cg->dirs_.push_back(dir);
    cg->memory_dir_ = cg->cpu_dir_ = cg->freezer_dir_ = cg->pids_dir_ = dir;
    cg->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg->dir_fd_ < 0) return fail("open " + dir, errno);
    if (limits.memory_bytes) {
      if (!write_text(dir + "/memory.max", std::to_string(*limits.memory_bytes), &err))
        return fail("memory.max", err);
      if (is_dir(dir) && ::access((dir + "/memory.swap.max").c_str(), F_OK) == 0 &&
          !write_text(dir + "/memory.swap.max", "0", &err))
        return fail("memory.swap.max", err);
      write_text(dir + "/memory.oom.group", "1");  // an OOM kill takes the whole job
    }
    if (limits.pids && !write_text(dir + "/pids.max", std::to_string(*limits.pids), &err))
      return fail("pids.max", err);
    if (limits.cpu_quota) {
      const auto quota = static_cast<long long>(*limits.cpu_quota * 100000);
      if (!write_text(dir + "/cpu.max", std::to_string(std::max(1000ll, quota)) + " 100000", &err))
        return fail("cpu.max", err);
    }
    return cg;
  }
  // v1 without a CPU quota: an idle cgroup of an earlier run, if one is pooled (see recycle()).
  if (!limits.cpu_quota) {
    std::unique_ptr<JobCgroup> pooled;
    {
      std::lock_guard lock(g_pool_mu);
      if (g_pool_owner != ::getpid()) {
        for (auto& inherited : g_pool) (void)inherited.release();  // the parent's: leave them be
        g_pool.clear();
        g_pool_owner = ::getpid();
      }
      if (!g_pool.empty()) {
        pooled = std::move(g_pool.back());
        g_pool.pop_back();
      }
    }
    if (pooled) {
      std::string why;
      if (pooled->configure_v1(limits, &why)) {
        pooled->emptied_ = false;
        pooled->mem_base_ = read_u64(pooled->memory_dir_ + "/memory.usage_in_bytes").value_or(0);
        pooled->oom_base_ = pooled->oom_seen_;
        return pooled;
      }
      // (destroyed here; a fresh one below)
    }
  }
  std::set<std::string> made;
  for (const auto& [ctrl, base] : h.v1_base) {
    // A separate cpu hierarchy is only needed for a quota (cpuacct accounts): one cgroup less
    // to create, attach to and remove per job.
    if (ctrl == "cpu" && !limits.cpu_quota && h.v1_base.count("cpuacct") && h.v1_base.at("cpuacct") != base)
      continue;
    const std::string dir = base + "/" + name;
    if (!made.count(dir)) {  // co-mounted controllers (cpu,cpuacct) share one directory
      if (::mkdir(dir.c_str(), 0755) != 0) return fail("mkdir " + dir, errno);
      made.insert(dir);
      cg->dirs_.push_back(dir);
    }
    if (ctrl == "memory") cg->memory_dir_ = dir;
    if (ctrl == "cpuacct") cg->cpu_dir_ = dir;
    if (ctrl == "freezer") cg->freezer_dir_ = dir;
    if (ctrl == "pids") cg->pids_dir_ = dir;
    if (ctrl == "cpu" && limits.cpu_quota) {
      const auto quota = static_cast<long long>(*limits.cpu_quota * 100000);
      if (!write_text(dir + "/cpu.cfs_period_us", "100000", &err) ||
          !write_text(dir + "/cpu.cfs_quota_us", std::to_string(std::max(1000ll, quota)), &err))
        return fail("cpu.cfs_quota_us", err);
    }
  }
  cg->poolable_ = !limits.cpu_quota;
  cg->has_memsw_ = ::access((cg->memory_dir_ + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
  if (!cg->configure_v1(limits, error)) return nullptr;
  return cg;
}

// v1 limits, written only where they differ from what this cgroup has (a pooled one keeps the
// previous run's): memory with swap off (memsw = limit, raised before and lowered after the
// limit so that memsw >= limit holds throughout), pids.
bool JobCgroup::configure_v1(const CgroupLimits& limits, std::string* error) {
  int err = 0;
  auto fail = [&](const std::string& what, int e) {
    *error = "cgroup: " + what + ": " + errno_text(e);
    return false;
  };
  const std::uint64_t want = limits.memory_bytes.value_or(kUnlimited);
  if (want != mem_limit_) {
    const std::string v = want == kUnlimited ? "-1" : std::to_string(want);
    const std::string limit = memory_dir_ + "/memory.limit_in_bytes";
    const std::string memsw = memory_dir_ + "/memory.memsw.limit_in_bytes";
    if (want > mem_limit_ && has_memsw_ && !write_text(memsw, v, &err)) return fail("memory.memsw.limit_in_bytes", err);
    if (!write_text(limit, v, &err)) return fail("memory.limit_in_bytes", err);
    if (want < mem_limit_ && has_memsw_ && !write_text(memsw, v, &err)) return fail("memory.memsw.limit_in_bytes", err);
    mem_limit_ = want;
    if (!swappiness_set_) {
      write_text(memory_dir_ + "/memory.swappiness", "0");
      swappiness_set_ = true;
    }
  }
  const std::string pids = limits.pids ? std::to_string(*limits.pids) : "max";
  if (pids != pids_max_) {
    if (pids_dir_.empty()) {
      if (limits.pids) return fail("pids limit without a pids controller", ENOTSUP);
    } else if (!write_text(pids_dir_ + "/pids.max", pids, &err)) {
      return fail("pids.max", err);
    }
    pids_max_ = pids;
  }
  return true;
}

void JobCgroup::recycle(std::unique_ptr<JobCgroup> cg) {
  if (!cg || cg->v2_ || !cg->poolable_ || !cg->emptied_) return;  // the destructor removes it
  // What the run left charged (page cache it read first, dentries): a little is fine (it is
  // reclaimable and subtracted from the next run's peak); a lot goes with the cgroup, as before.
  const auto usage = read_u64(cg->memory_dir_ + "/memory.usage_in_bytes");
  if (!usage || *usage > kPoolMaxResidue) return;
  if (!write_text(cg->memory_dir_ + "/memory.max_usage_in_bytes", "0")) return;
  if (!cg->cpu_dir_.empty() && !write_text(cg->cpu_dir_ + "/cpuacct.usage", "0")) return;
  std::unique_lock lock(g_pool_mu);
  if (g_pool_owner != ::getpid() || g_pool.size() >= kPoolMax) {
    lock.unlock();
    return;  // (removed by cg's destructor)
  }
  static const bool at_exit = std::atexit([] { JobCgroup::trim_pool(); }) == 0;
  (void)at_exit;
  g_pool.push_back(std::move(cg));
}

int JobCgroup::trim_pool() {
  std::vector<std::unique_ptr<JobCgroup>> idle;
  {
    std::lock_guard lock(g_pool_mu);
    if (g_pool_owner != ::getpid()) {
      for (auto& inherited : g_pool) (void)inherited.release();
      g_pool.clear();
    }
    idle.swap(g_pool);
  }
  return static_cast<int>(idle.size());  // destroyed here: removed
}

bool JobCgroup::attach(pid_t pid, std::string* error) {
  for (const auto& dir : dirs_) {
    int err = 0;
    if (!write_text(dir + "/cgroup.procs", std::to_string(pid), &err)) {
      *error = "cgroup: attach to " + dir + ": " + errno_text(err);
      return false;
    }
  }
  return true;
}

CgroupStats JobCgroup::stats() const {
  CgroupStats s;
  if (v2_) {
    s.memory_peak = read_u64(memory_dir_ + "/memory.peak");
    s.oom_killed = read_key(memory_dir_ + "/memory.events", "oom_kill").value_or(0) > 0 ||
                   read_key(memory_dir_ + "/memory.events", "oom_group_kill").value_or(0) > 0;
    if (auto usec = read_key(cpu_dir_ + "/cpu.stat", "usage_usec")) s.cpu_seconds = static_cast<double>(*usec) / 1e6;
    return s;
  }
  if (!memory_dir_.empty()) {
    // A pooled cgroup starts with what earlier runs left charged (mem_base_) and their OOM kills.
    if (auto peak = read_u64(memory_dir_ + "/memory.max_usage_in_bytes"))
      s.memory_peak = *peak > mem_base_ ? *peak - mem_base_ : 0;
    auto kills = read_key(memory_dir_ + "/memory.oom_control", "oom_kill");
    s.oom_killed = kills ? *kills > oom_base_ : false;
    if (kills) oom_seen_ = *kills;
  }
  if (!cpu_dir_.empty())
    if (auto ns = read_u64(cpu_dir_ + "/cpuacct.usage")) s.cpu_seconds = static_cast<double>(*ns) / 1e9;
  return s;
}

void JobCgroup::kill_all() {
  if (dirs_.empty() || emptied_) return;
  if (v2_) {
    if (write_text(dirs_[0] + "/cgroup.kill", "1")) return;
    write_text(dirs_[0] + "/cgroup.freeze", "1");
    for (int round = 0; round < 10 && !procs_of(dirs_[0]).empty(); ++round)
      for (pid_t p : procs_of(dirs_[0])) ::kill(p, SIGKILL);
    write_text(dirs_[0] + "/cgroup.freeze", "0");
    return;
  }
  kill_v1(freezer_dir_, memory_dir_.empty() ? dirs_[0] : memory_dir_, pids_dir_);
}

void JobCgroup::reaped() {
  // Called once the tree's init is reaped: nothing can join the cgroup any more, so one check
  // that it is empty lets kill_all() (and the destructor's) skip the work.
  if (dirs_.empty()) return;
  auto empty = [this] {
    if (!v2_) return v1_empty(pids_dir_, memory_dir_.empty() ? dirs_[0] : memory_dir_);
    auto ev = read_text(dirs_[0] + "/cgroup.events");
    return ev && ev->find("populated 0") != std::string::npos;
  };
  emptied_ = empty();
  if (!emptied_) {
    kill_all();
    emptied_ = empty();
  }
}

JobCgroup::~JobCgroup() {
  kill_all();
  for (const auto& dir : dirs_) remove_dir(dir);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string cgroup_mode(std::string* why) {
  const Hierarchy& h = hierarchy();
  if (why) *why = h.why;
  return h.v2 ? "v2" : h.usable() ? "v1" : "";
}

int cleanup_stale_cgroups(std::string* log) {
  const Hierarchy& h = hierarchy();
  if (!h.usable()) return 0;
  std::lock_guard lock(g_mu);
  std::string error;
  if (h.v2 && !prepare_v2(h, &error) && log) *log += error + "\n";
  std::vector<std::string> bases;
  if (h.v2) bases.push_back(h.v2_base);
  for (const auto& [ctrl, base] : h.v1_base) bases.push_back(base);
  int removed = 0;
  for (const auto& base : bases) {
    DIR* d = ::opendir(base.c_str());
    if (!d) continue;
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(kPrefix, 0) != 0 || n == kSupervisor) continue;
      const pid_t owner = static_cast<pid_t>(std::atol(n.c_str() + std::strlen(kPrefix)));
      if (owner == ::getpid() || (owner > 0 && ::kill(owner, 0) == 0)) continue;  // alive
      stale.push_back(base + "/" + n);
    }
    ::closedir(d);
    for (const auto& dir : stale) {
      if (h.v2) {
        if (!write_text(dir + "/cgroup.kill", "1"))
          for (pid_t p : procs_of(dir)) ::kill(p, SIGKILL);
      } else {
        const std::string fz = h.v1_base.count("freezer") ? h.v1_base.at("freezer") + dir.substr(base.size()) : "";
        kill_v1(is_dir(fz) ? fz : "", dir);
      }
      if (remove_dir(dir)) {
        ++removed;
        if (log) *log += "removed stale cgroup " + dir + "\n";
      } else if (log) {
        *log += "cannot remove stale cgroup " + dir + ": " + errno_text(errno) + "\n";
      }
    }
  }
  return removed;
}


// ---------------------------------------------------------------------------------------------
// Start-up (setup_cgroups): v2 delegation, a subtree of our own when our cgroup is shared, a probe.

namespace {

constexpr const char* kDevPrefix = "kjudge-dev.";

bool failed(std::string* error, const std::string& what, int err) {
  *error = what + ": " + errno_text(err);
  return false;
}

// "+memory +pids +cpu", as far as `dir` offers them.
std::string wanted_controllers(const std::string& dir) {
  const auto offered = read_text(dir + "/cgroup.controllers").value_or("");
  std::string want;
  for (const char* c : {"memory", "pids", "cpu"})
    if (offered.find(c) != std::string::npos) want += std::string(want.empty() ? "+" : " +") + c;
  return want;
}

bool delegates(const std::string& dir) {
  const auto sc = read_text(dir + "/cgroup.subtree_control").value_or("");
  return sc.find("memory") != std::string::npos && sc.find("pids") != std::string::npos;
}

// Processes in dir other than us and our zygote: a shell, its other children, a dev redis-server.
bool shared_with_others(const std::string& dir) {
  int zygote = 0;
  zygote_ready(&zygote);
  for (pid_t p : procs_of(dir))
    if (p != ::getpid() && p != zygote) return true;
  return false;
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

// A dead daemon's kjudge-dev.<pid> subtree: everything in it killed, then removed bottom-up.
void remove_tree(const std::string& dir) {
  for (const auto& sub : subdirs(dir)) remove_tree(sub);
  if (!write_text(dir + "/cgroup.kill", "1"))
    for (pid_t p : procs_of(dir)) ::kill(p, SIGKILL);
  remove_dir(dir);
}

void remove_stale_subtrees(const std::string& top) {
  for (const auto& dir : subdirs(top)) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    if (name.rfind(kDevPrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kDevPrefix)));
    if (owner > 0 && owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH) remove_tree(dir);
  }
}

// Root, v2, our cgroup shared with other processes: <top>/kjudge-dev.<pid>, with us (and our
// zygote) in its leaf kjsbx-supervisor, the job cgroups and companions (move_to_leaf) beside it.
bool make_own_subtree(Hierarchy& h, std::string* error) {
  const std::string& top = h.v2_mount;
  remove_stale_subtrees(top);
  int err = 0;
  if (!delegates(top) && !write_text(top + "/cgroup.subtree_control", wanted_controllers(top), &err))
    return failed(error, "enable memory/pids in " + top, err);
  const std::string tree = top + "/" + kDevPrefix + std::to_string(::getpid());
  const std::string leaf = tree + "/" + kSupervisor;
  for (const auto& d : {tree, leaf})
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return failed(error, "mkdir " + d, errno);
  int zygote = 0;
  zygote_ready(&zygote);
  if (zygote > 0) write_text(leaf + "/cgroup.procs", std::to_string(zygote));
  if (!write_text(leaf + "/cgroup.procs", std::to_string(::getpid()), &err))
    return failed(error, "move kjudged into " + leaf, err);
  if (!write_text(tree + "/cgroup.subtree_control", wanted_controllers(tree), &err))
    return failed(error, "enable memory/pids in " + tree, err);
  h.v2_base = tree;
  return true;
}

std::string own_command_line() {
  std::string cmd;
  const auto raw = read_text("/proc/self/cmdline").value_or("kjudged");
  std::istringstream in(raw);
  for (std::string arg; std::getline(in, arg, '\0');)
    cmd += (cmd.empty() ? "" : " ") + (arg.find_first_of(" '\"$") == std::string::npos ? arg : "'" + arg + "'");
  return cmd;
}

// The command that gives kjudged a cgroup it can delegate from.
std::string fix_command(const Hierarchy& h, const CgroupSetupOptions& o) {
  const std::string cmd = o.command_line.empty() ? own_command_line() : o.command_line;
  const bool systemd = is_dir("/run/systemd/system");
  if (!h.v2) return ::geteuid() == 0 ? "" : "sudo " + cmd + "   (cgroup v1: only root can create job cgroups)";
  if (::geteuid() != 0)
    return systemd ? "systemd-run --user --scope -p Delegate=yes -- " + cmd
                   : "sudo " + cmd + "   (or run it in a cgroup delegated to you, with memory and pids)";
  if (systemd) return "systemd-run --scope -p Delegate=yes -- " + cmd;
  const std::string top = h.v2_mount;
  return "mkdir -p " + top + "/init && for p in $(cat " + top + "/cgroup.procs); do echo $p > " + top +
         "/init/cgroup.procs; done; echo '+memory +pids' > " + top + "/cgroup.subtree_control; " + cmd;
}

bool setup_v2(Hierarchy& h, bool own_subtree, std::string* error) {
  std::lock_guard lock(g_mu);
  if (g_v2_ready) return true;
  const bool shared = !delegates(h.v2_base) && shared_with_others(h.v2_base);
  if (!shared) return prepare_v2(h, error);
  if (own_subtree && ::geteuid() == 0 && make_own_subtree(h, error)) return g_v2_ready = true;
  if (error->empty())
    *error = h.v2_base + " holds other processes (a shell, a session), so it cannot delegate memory and pids "
             "to job cgroups (cgroup v2's no-internal-processes rule)";
  return false;
}

}  // namespace

bool probe_job_cgroup(std::string* error) {
  CgroupLimits limits;
  limits.memory_bytes = 64ull << 20;
  limits.pids = 64;
  std::string why;
  auto cg = JobCgroup::create(limits, &why);
  if (cg) return true;  // removed again by its destructor
  if (why.empty()) cgroup_mode(&why);
  *error = "cannot create a job cgroup with memory and pids limits: " + why;
  return false;
}

CgroupSetup setup_cgroups(const CgroupSetupOptions& opts) {
  Hierarchy& h = hierarchy_mut();
  CgroupSetup s;
  s.mode = h.v2 ? "v2" : h.usable() ? "v1" : "";
  if (h.v2 && !setup_v2(h, opts.own_subtree, &s.error)) {
    s.fix = fix_command(h, opts);
    return s;
  }
  s.base = h.v2 ? h.v2_base : "";
  s.ok = probe_job_cgroup(&s.error);
  if (!s.ok) s.fix = fix_command(h, opts);
  return s;
}

bool move_to_leaf(pid_t pid, const std::string& leaf, std::string* error) {
  const Hierarchy& h = hierarchy();
  std::lock_guard lock(g_mu);
  if (!h.v2 || !g_v2_ready) return true;  // v1: companions stay where they are
  const std::string dir = h.v2_base + "/" + leaf;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return failed(error, "mkdir " + dir, errno);
  int err = 0;
  if (!write_text(dir + "/cgroup.procs", std::to_string(pid), &err))
    return failed(error, "move pid " + std::to_string(pid) + " into " + dir, err);
  return true;
}

}  // namespace kjsandbox
