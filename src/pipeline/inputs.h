// The oracle's input generator: fills every IN/INOUT tensor of a task from a secret per-run seed.
// Seeds come from the OS entropy pool and are never written into results or feedback.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kjudge/v1/job.pb.h"

namespace kj {

struct InputSet {
  std::string name;                // "declared", "signed", ...
  std::filesystem::path dir;       // arg<i>.bin for IN/INOUT tensors
};

// Named value distributions used for the extra correctness sets, in order. Set 0 is always the
// declared distribution.
const std::vector<std::string>& input_set_names();

// Writes set `index` for `task` into `dir` (created). Returns the set's name.
InputSet write_input_set(const kjudge::v1::NativeTask& task, unsigned index, const std::filesystem::path& dir);

// Same generator for an explicit set name ("declared", "signed", "large", "spike", "timing-<k>", ...):
// the part before '-' picks the variant; anything unknown is the declared distribution.
InputSet write_named_input_set(const kjudge::v1::NativeTask& task, const std::string& name,
                               const std::filesystem::path& dir);

// 256 bits from getrandom(2).
std::array<std::uint64_t, 4> secret_seed();

// xoshiro256** (Blackman & Vigna): fast, well studied; seeded from getrandom, so its output is
// unpredictable to the candidate, which never sees the seed.
class Xoshiro256ss {
 public:
  explicit Xoshiro256ss(const std::array<std::uint64_t, 4>& seed) : s_(seed) {}
  std::uint64_t next();
  double uniform01();                   // [0, 1), 53 bits
  std::uint64_t below(std::uint64_t n); // [0, n), unbiased

 private:
  std::array<std::uint64_t, 4> s_;
};

std::uint64_t tensor_elements(const kjudge::v1::TensorSpec& t);

}  // namespace kj
