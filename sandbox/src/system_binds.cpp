// The host system paths every sandbox needs to run compilers and interpreters.
#include <sys/stat.h>

#include "kjsandbox/policy.h"

namespace kjsandbox {

std::vector<BindMount> default_system_binds() {
  std::vector<BindMount> binds;
  // /sys/devices/system/cpu: PoCL (through hwloc) aborts without the CPU topology; PyTorch's
  // cpuinfo reads it too.
  for (const char* path : {"/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/OpenCL",
                           "/sys/devices/system/cpu"}) {
    struct stat st{};
    if (::stat(path, &st) == 0) binds.push_back({path, "", false});
  }
  return binds;
}

}  // namespace kjsandbox
