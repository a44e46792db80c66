// The system-call filter: built and compiled to BPF in the parent (libseccomp allocates), once
// per (profile, extra_allow), then only loaded by the sandbox's init (see init.cpp).
#pragma once

#include <linux/filter.h>

#include <memory>
#include <string>
#include <vector>

#include "kjsandbox/policy.h"

namespace kjsandbox {

struct SeccompProgram {
  std::vector<sock_filter> code;
  sock_fprog prog{};  // points into code
  std::vector<sock_filter> ioctl_code;  // second filter: TIOCSTI with upper bits set -> EPERM
  sock_fprog ioctl_prog{};
  bool badarch_kills = false;  // non-native ABIs SIGSYS-kill instead of notifying
};

// nullptr with `error` set when the profile is unknown or libseccomp refuses it. The default
// action is SECCOMP_RET_USER_NOTIF: init receives the call and kills the tree (Enforce) or lets
// it through and records it (Log). Non-native ABIs (i386 int 0x80, x32) take the same path.
std::shared_ptr<const SeccompProgram> compile_seccomp(const Seccomp& seccomp, std::string* error);

// Names of the allow-list's calls and filters, for tests and tools ("clone:no-ns-flags", ...).
std::vector<std::string> seccomp_profile_entries(const std::string& profile, std::string* error);

// "x86_64" / "x86" / "x32" and the call's name ("#N" when unknown).
std::string seccomp_arch_name(std::uint32_t audit_arch, int nr);
std::string seccomp_syscall_name(std::uint32_t audit_arch, int nr);

// Embedded data files (sandbox/policies/*.txt and sandbox/profiles/*.toml), by file stem.
const std::vector<std::pair<std::string, std::string>>& embedded_seccomp_profiles();
const std::vector<std::pair<std::string, std::string>>& embedded_device_profiles();

}  // namespace kjsandbox
