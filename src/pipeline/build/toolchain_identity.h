// What a KernelBench build depends on beyond its job, in a form two nodes can compare: the python
// interpreter, torch's install (its path and version file), the harness's sources and the host
// compiler. Two nodes with the same identity produce interchangeable builds, so it is part of the
// shared build store's content key; a node with another torch or compiler never takes them.
#pragma once

#include <string>

#include "common/config.h"

namespace kj {

// SHA-256 hex, computed once per process (a python start without importing torch, g++ --version).
std::string toolchain_identity(const Config& cfg);

}  // namespace kj
