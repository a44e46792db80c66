// Child side: the last steps of init before it forks the command, in design §7 order:
// securebits locked, every capability set emptied (bounding, ambient, effective/permitted/
// inheritable, with libcap), no_new_privs, and the seccomp filter loaded last. Only system
// calls: libcap's calls used here do not allocate (the cap_t was made by the parent), and the
// BPF program was compiled by the parent.
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include <cerrno>

#include "child_plan.h"
#include "sys.h"
#include "wire.h"

namespace kjsandbox {

int harden(const ChildPlan& plan) {
  const int fd = plan.fd_status_write;
  auto fail = [&](Step step, int index = -1) {
    send_setup_error(fd, step, index, errno);
    return -1;
  };
  // Root (uid 0) gets no special treatment, setuid transitions keep no capabilities, and the
  // capability rules cannot be relaxed again: every bit set and locked.
  const unsigned bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                        SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                        SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (cap_set_secbits(bits) != 0) return fail(Step::Securebits);
  for (int c = 0; c <= plan.cap_last; ++c)
    if (cap_drop_bound(static_cast<cap_value_t>(c)) != 0 && errno != EINVAL) return fail(Step::CapBound, c);
  if (cap_reset_ambient() != 0 && errno != EINVAL) return fail(Step::CapAmbient);
  if (cap_set_proc(static_cast<cap_t>(plan.empty_caps)) != 0) return fail(Step::CapSet);
  if (sys::prctl5(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(Step::NoNewPrivs);
  if (!plan.seccomp) return -2;
  if (sys::seccomp_filter(0, &plan.seccomp->ioctl_prog) != 0) return fail(Step::SeccompLoad);
  int listener = sys::seccomp_filter(SECCOMP_FILTER_FLAG_NEW_LISTENER, &plan.seccomp->prog);
  if (listener < 0) return fail(Step::SeccompLoad);
  return listener;
}

}  // namespace kjsandbox
