// The bytes of a shared build in Redis: "kjart1\n" <sha256 hex of body> "\n" <body>, body =
// <header length> "\n" <header JSON> <partial result> <file bytes...> (sizes in the header). The
// hash is checked on every fetch; a value that fails it, or names another key, or exceeds the
// size bound, is never used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/build/store.h"

namespace kj::buildfarm {

std::string pack_artifact(const SharedBuild& b);

// The build, or nullopt with `why` set: bad hash, bad layout, another key, too large.
std::optional<SharedBuild> unpack_artifact(const std::string& value, const std::string& key, std::uint64_t max_bytes,
                                           std::string& why);

}  // namespace kj::buildfarm
