#include "pipeline/checks/reference_meaning.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "pipeline/job/dtype.h"

namespace kj {
namespace v1 = kjudge::v1;
namespace fs = std::filesystem;

namespace {
bool has_non_finite(v1::DType dtype, const fs::path& file) {
  if (!dtype_is_float(dtype) || dtype_size(dtype) == 0) return false;
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  const std::size_t n = bytes.size() / dtype_size(dtype);
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(dtype_load(dtype, data, i))) return true;
  return false;
}

bool set_has_non_finite(const v1::NativeTask& task, const fs::path& dir) {
  for (int i = 0; i < task.args_size(); ++i) {
    const auto& a = task.args(i);
    if (a.has_tensor() && a.tensor().role() != v1::IN &&
        has_non_finite(a.tensor().dtype(), dir / fmt::format("arg{}.bin", i)))
      return true;
  }
  return false;
}
}  // namespace

std::optional<Decision> decide_reference_meaning(const v1::NativeTask& task, const fs::path& ref_dir, unsigned sets,
                                                 const InputDigests& inputs) {
  if (sets == 0) return std::nullopt;
  bool every_set_non_finite = true;
  std::set<std::uint64_t> outputs;
  std::set<std::map<int, std::uint64_t>> distinct_inputs;
  for (unsigned k = 0; k < sets; ++k) {
    const fs::path dir = ref_dir / fmt::format("out{}", k);
    every_set_non_finite = every_set_non_finite && set_has_non_finite(task, dir);
    outputs.insert(outputs_digest_of_dir(task, dir));
    if (const auto it = inputs.find(k); it != inputs.end()) distinct_inputs.insert(it->second);
  }
  if (every_set_non_finite)
    return job_fault("the reference's outputs have NaN/Inf values on every input set: a candidate has nothing to be "
                     "compared against (check the inputs' declared distributions)");
  if (sets > 1 && distinct_inputs.size() > 1 && outputs.size() == 1)
    return job_fault("the reference's outputs are the same on every input set although the inputs differ: they do not "
                     "depend on the inputs, so any constant would pass");
  return std::nullopt;
}

}  // namespace kj
