#include "pipeline/run/host_fault.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace kj {
namespace fs = std::filesystem;

namespace {

// Below these a filesystem is full for practical purposes (the next compiler output fails).
constexpr std::uint64_t kFullBytes = 1ull << 20, kFullInodes = 64;

struct Space {
  std::uint64_t avail_bytes = 0, used_bytes = 0, avail_inodes = 0, used_inodes = 0;
  bool counts_inodes = false;  // btrfs and some network filesystems report no inode totals
};

// What an unprivileged user (the sandbox uid) may still use: f_bavail, not root's f_bfree.
std::optional<Space> space_of(const fs::path& p, int& err) {
  struct statvfs s{};
  if (::statvfs(p.c_str(), &s) != 0) {
    err = errno;
    return std::nullopt;
  }
  Space sp;
  sp.avail_bytes = static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
  sp.used_bytes = static_cast<std::uint64_t>(s.f_blocks - s.f_bfree) * s.f_frsize;
  sp.counts_inodes = s.f_files > 0;
  sp.avail_inodes = s.f_favail;
  sp.used_inodes = s.f_files - s.f_ffree;
  return sp;
}

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// The job's own footprint: allocated bytes and inodes under its workspace (symlinks not followed).
struct Usage {
  std::uint64_t bytes = 0, inodes = 0;
};
Usage usage_of(const fs::path& root) {
  Usage u;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    u.bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    ++u.inodes;
  }
  return u;
}

// The candidate's doing when its workspace used up the headroom the node guaranteed at the start,
// or holds half of all that is used on the filesystem.
bool job_filled_it(const Usage& u, const Space& s, const LimitsConfig& l, bool inodes) {
  if (inodes) return u.inodes * 2 >= s.used_inodes || (l.min_free_inodes && u.inodes >= l.min_free_inodes);
  return u.bytes * 2 >= s.used_bytes || (l.min_free_bytes && u.bytes >= l.min_free_bytes);
}

// The judge's own write of one byte into dir: 0, or the errno. O_NOFOLLOW|O_NONBLOCK: a symlink
// or FIFO the candidate planted under the name fails (ELOOP, ENXIO), which is not a host errno.
int probe_write(const fs::path& dir) {
  static std::atomic<unsigned> n{0};
  const fs::path p = dir / fmt::format(".kjudge-probe-{}-{}", ::getpid(), n++);
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = ::write(fd, "k", 1) == 1 ? 0 : (errno ? errno : EIO);
  if (::close(fd) != 0 && !err) err = errno;
  ::unlink(p.c_str());
  return err;
}

// errnos that say the host (filesystem, file tables, memory) failed, whoever asked.
bool host_errno(int e) {
  return e == ENOSPC || e == EDQUOT || e == EROFS || e == EIO || e == EMFILE || e == ENFILE || e == ENOMEM;
}

}  // namespace

std::optional<std::string> check_free_space(const fs::path& state_dir, const LimitsConfig& l) {
  if (!l.min_free_bytes && !l.min_free_inodes) return std::nullopt;
  int err = 0;
  const auto s = space_of(state_dir, err);
  if (!s) return fmt::format("cannot check the free space of state dir {}: {}", state_dir.string(), strerror(err));
  if (s->avail_bytes < l.min_free_bytes)
    return fmt::format("state dir {} has {} free, less than [limits] min_free_bytes ({}): job not started",
                       state_dir.string(), mib(s->avail_bytes), mib(l.min_free_bytes));
  if (s->counts_inodes && s->avail_inodes < l.min_free_inodes)
    return fmt::format("state dir {} has {} inodes free, less than [limits] min_free_inodes ({}): job not started",
                       state_dir.string(), s->avail_inodes, l.min_free_inodes);
  return std::nullopt;
}

std::optional<std::string> host_fault_after_step(const fs::path& job_dir, const LimitsConfig& l) {
  const int werr = probe_write(job_dir);
  int serr = 0;
  const auto s = space_of(job_dir, serr);
  if (!s) return fmt::format("cannot statvfs the job dir {}: {}", job_dir.string(), strerror(serr));
  const bool inodes_short = s->counts_inodes && s->avail_inodes < kFullInodes;
  const bool bytes_short = s->avail_bytes < kFullBytes || werr == EDQUOT || (werr == ENOSPC && !inodes_short);
  if (inodes_short || bytes_short) {
    const Usage u = usage_of(job_dir.parent_path());
    if ((inodes_short && job_filled_it(u, *s, l, true)) || (bytes_short && job_filled_it(u, *s, l, false)))
      return std::nullopt;
    return fmt::format("the job's filesystem is full ({} and {} inodes free; this job holds {} in {} files){}",
                       mib(s->avail_bytes), s->avail_inodes, mib(u.bytes), u.inodes,
                       werr ? std::string(": ") + strerror(werr) : std::string());
  }
  if (host_errno(werr))
    return fmt::format("the judge cannot write to the job dir {}: {}", job_dir.string(), strerror(werr));
  return std::nullopt;
}

std::optional<std::string> host_fault_after_job(const fs::path& state_dir) {
  std::error_code ec;
  const fs::path dir = fs::is_directory(state_dir / "jobs", ec) ? state_dir / "jobs" : state_dir;
  const int werr = probe_write(dir);
  int serr = 0;
  const auto s = space_of(dir, serr);
  if (!s) return std::nullopt;  // no state dir to judge by (a local eval's): the verdict stands
  if (s->avail_bytes < kFullBytes || (s->counts_inodes && s->avail_inodes < kFullInodes) || host_errno(werr))
    return fmt::format("the state dir's filesystem is full or unwritable after the job ({} and {} inodes free{})",
                       mib(s->avail_bytes), s->avail_inodes, werr ? std::string("; ") + strerror(werr) : "");
  return std::nullopt;
}

}  // namespace kj
