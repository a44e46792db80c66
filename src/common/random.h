// Randomness from the OS entropy pool (getrandom), for names and picks nobody may predict or
// collide with: temporary files and work dirs, audited calls, group seeds.
#pragma once

#include <fmt/format.h>
#include <sys/random.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kj {

inline std::uint64_t random_u64() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof(v), 0) != sizeof(v)) throw std::runtime_error("getrandom failed");
  return v;
}

// ".<16 hex digits>": a name no concurrent writer picks.
inline std::string random_suffix() { return fmt::format(".{:016x}", random_u64()); }

}  // namespace kj
