// Child side: the root view. Runs in the sandbox's PID 1, in its own user+mount namespace,
// before the command exists. Only system calls, no allocation (see sys.h).
//
//   1. make every mount private (nothing propagates to or from the host);
//   2. mount a tiny scratch tmpfs on /tmp and pivot_root into it: the host tree is now under
//      /oldroot (still usable as bind sources) and nothing of it is hidden by our mounts;
//   3. mount a size-capped tmpfs on /newroot and execute the plan's ops into it (binds, tmpfs,
//      symlinks, /dev, a fresh /proc while a full /proc is still visible);
//   4. detach /oldroot, pivot_root into /newroot, detach the scratch, seal / and /dev read-only.
#include <sys/statvfs.h>

#include <climits>
#include <cerrno>
#include <cstring>

#include "child_plan.h"
#include "sys.h"
#include "wire.h"

namespace kjsandbox {
namespace {

struct Fail {
  int fd;
  bool operator()(Step step, int index = -1) const {
    send_setup_error(fd, step, index, errno);
    return false;
  }
};

// mkdir -p on a stack buffer; existing directories are fine.
int mkdir_p(const char* path, bool include_last) {
  char buf[PATH_MAX];
  std::size_t n = std::strlen(path);
  if (n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(buf, path, n + 1);
  if (!include_last) {
    while (n > 1 && buf[n - 1] != '/') --n;
    if (n > 1) --n;
    buf[n] = '\0';
  }
  // Ops run shallowest first, so the parent usually exists: one mkdir instead of one per
  // component. (EEXIST wins over EROFS for an existing path, as in the loop below.)
  if (n <= 1 || sys::mkdir(buf, 0755) == 0 || errno == EEXIST) return 0;
  if (errno != ENOENT) return -1;
  for (std::size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (sys::mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    buf[i] = saved;
  }
  return 0;
}

int make_mount_point(const MountOp& op) {
  if (op.source_is_dir) return mkdir_p(op.target, true);
  if (mkdir_p(op.target, false) != 0) return -1;
  int fd = sys::open(op.target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    // An existing mount point (a file inside a read-only bind) is fine.
    struct stat st{};
    return sys::stat(op.target, &st) == 0 ? 0 : -1;
  }
  sys::close(fd);
  return 0;
}

// Adds flags to a mount (and its submounts when recursive) without clearing any flag the
// kernel locked on it (a mount copied into a user namespace keeps its ro/nosuid/nodev/noexec/
// atime flags locked). mount_setattr only ever adds what it is given; older kernels get a
// remount that repeats the flags statfs reports.
int add_mount_flags(const char* path, std::uint64_t attrs, bool recursive) {
  if (sys::mount_setattr(path, recursive ? AT_RECURSIVE : 0u, attrs) == 0) return 0;
  // ENOSYS: kernel < 5.12; EPERM: a seccomp profile (container runtimes) that does not know it.
  if (errno != ENOSYS && errno != EPERM) return -1;
  struct statfs sf{};
  if (sys::statfs(path, &sf) != 0) return -1;
  unsigned long flags = MS_REMOUNT | MS_BIND;
  const unsigned long have = static_cast<unsigned long>(sf.f_flags);
  if (have & ST_RDONLY) flags |= MS_RDONLY;
  if (have & ST_NOSUID) flags |= MS_NOSUID;
  if (have & ST_NODEV) flags |= MS_NODEV;
  if (have & ST_NOEXEC) flags |= MS_NOEXEC;
  if (have & ST_NOATIME) flags |= MS_NOATIME;
  if (have & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (have & ST_RELATIME) flags |= MS_RELATIME;
  if (attrs & MOUNT_ATTR_RDONLY) flags |= MS_RDONLY;
  if (attrs & MOUNT_ATTR_NOSUID) flags |= MS_NOSUID;
  if (attrs & MOUNT_ATTR_NODEV) flags |= MS_NODEV;
  if (attrs & MOUNT_ATTR_NOEXEC) flags |= MS_NOEXEC;
  return sys::mount(nullptr, path, nullptr, flags, nullptr);
}

bool run_op(const MountOp& op, int index, const Fail& fail) {
  switch (op.kind) {
    case MountOp::Kind::Bind:
      if (make_mount_point(op) != 0) return fail(Step::MountPoint, index);
      if (sys::mount(op.source, op.target, nullptr, MS_BIND | (op.recursive ? MS_REC : 0), nullptr) != 0)
        return fail(Step::Bind, index);
      if (add_mount_flags(op.target, op.attrs, op.recursive) != 0) return fail(Step::BindFlags, index);
      return true;
    case MountOp::Kind::Tmpfs:
      if (mkdir_p(op.target, true) != 0) return fail(Step::MountPoint, index);
      if (sys::mount("tmpfs", op.target, "tmpfs", op.mount_flags, op.data) != 0)
        return fail(Step::Tmpfs, index);
      return true;
    case MountOp::Kind::Symlink:
      if (mkdir_p(op.target, false) != 0) return fail(Step::MountPoint, index);
      if (sys::symlink(op.source, op.target) != 0 && errno != EEXIST) return fail(Step::Symlink, index);
      return true;
    case MountOp::Kind::Mask:
    case MountOp::Kind::ReadOnly: {
      struct stat st{};
      if (sys::stat(op.target, &st) != 0) return true;  // this kernel has no such entry
      const bool dir = S_ISDIR(st.st_mode);
      if (op.kind == MountOp::Kind::Mask && dir) {
        if (sys::mount("tmpfs", op.target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       "size=4k,nr_inodes=1,mode=555") != 0)
          return fail(Step::Tmpfs, index);
        return true;
      }
      const char* source = op.kind == MountOp::Kind::Mask ? op.source : op.target;
      if (sys::mount(source, op.target, nullptr, MS_BIND | (dir ? MS_REC : 0), nullptr) != 0)
        return fail(Step::Bind, index);
      if (add_mount_flags(op.target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                          dir) != 0)
        return fail(Step::BindFlags, index);
      return true;
    }
    case MountOp::Kind::Proc:
      if (mkdir_p(op.target, true) != 0) return fail(Step::MountPoint, index);
      if (sys::mount("proc", op.target, "proc", op.mount_flags, nullptr) != 0)
        return fail(Step::Proc, index);
      return true;
  }
  return true;
}

}  // namespace

bool build_root(const ChildPlan& plan) {
  const Fail fail{plan.fd_status_write};

  if (sys::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail(Step::MountPrivate);
  if (sys::mount("tmpfs", kScratchDir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 plan.scratch_tmpfs_options) != 0)
    return fail(Step::ScratchTmpfs);
  if (sys::mkdir(kScratchNewRoot, 0755) != 0 || sys::mkdir(kScratchOldRoot, 0700) != 0)
    return fail(Step::ScratchDirs);
  if (sys::pivot_root(kScratchDir, kScratchOldRoot) != 0) return fail(Step::PivotScratch);
  if (sys::chdir("/") != 0) return fail(Step::PivotScratch);

  if (sys::mount("tmpfs", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV, plan.root_tmpfs_options) != 0)
    return fail(Step::RootTmpfs);
  for (std::size_t i = 0; i < plan.ops.size(); ++i)
    if (!run_op(plan.ops[i], static_cast<int>(i), fail)) return false;

  // The fresh /proc is mounted already: the host's may go now.
  if (sys::umount2(kOldRoot, MNT_DETACH) != 0) return fail(Step::DetachHost);
  if (sys::chdir(kNewRoot) != 0 || sys::pivot_root(".", ".") != 0) return fail(Step::PivotRoot);
  if (sys::umount2(".", MNT_DETACH) != 0 || sys::chdir("/") != 0) return fail(Step::PivotRoot);

  for (std::size_t i = 0; i < plan.seal_readonly.size(); ++i)
    if (add_mount_flags(plan.seal_readonly[i], MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, false) != 0)
      return fail(Step::SealRoot, static_cast<int>(i));
  return true;
}

}  // namespace kjsandbox
