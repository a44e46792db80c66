// Where the single-node dev mode keeps its socket and state: $XDG_RUNTIME_DIR/kjudge, else
// /tmp/kjudge-<uid>. kjudged --dev starts its redis-server there; the CLI finds it there, and
// `kjudge eval` shares the dev daemon's caches (<runtime dir>/state/cache).
#pragma once

#include <filesystem>

namespace kj {

std::filesystem::path default_runtime_dir();

// <default runtime dir>/state: the dev daemon's state_dir when it runs without a config.
std::filesystem::path dev_state_dir();

}  // namespace kj
