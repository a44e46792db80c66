#include "common/runtime_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace kj {

std::filesystem::path default_runtime_dir() {
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::filesystem::path(x) / "kjudge";
  return std::filesystem::temp_directory_path() / ("kjudge-" + std::to_string(::getuid()));
}

std::filesystem::path dev_state_dir() { return default_runtime_dir() / "state"; }

}  // namespace kj
