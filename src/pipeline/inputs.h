// The oracle's input generator: fills every IN/INOUT tensor of a task from a secret per-run seed.
// Seeds come from the OS entropy pool and are never written into results or feedback.
#pragma once

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

std::uint64_t tensor_elements(const kjudge::v1::TensorSpec& t);

}  // namespace kj
