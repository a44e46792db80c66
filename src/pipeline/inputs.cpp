#include "pipeline/inputs.h"

#include <fmt/format.h>

#include <fstream>
#include <random>
#include <stdexcept>

#include "pipeline/dtype.h"

namespace kj {
namespace v1 = kjudge::v1;

namespace {

std::mt19937_64 seeded_engine() {
  std::random_device rd;  // /dev/urandom-backed on Linux
  std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
  return std::mt19937_64(seq);
}

// One value generator per tensor, chosen by the set: declared distribution, or a variant of it.
struct Generator {
  v1::DType dtype;
  v1::Distribution dist;
  std::string set;

  double operator()(std::mt19937_64& rng) const {
    if (dist.has_constant()) return dist.constant();
    if (!dtype_is_float(dtype)) {
      std::int64_t lo = 0, hi = 100;
      if (dist.has_int_range()) lo = dist.int_range().low(), hi = dist.int_range().high();
      if (dtype == v1::BOOL) lo = 0, hi = 1;
      return static_cast<double>(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng));
    }
    double lo = -1, hi = 1;
    if (dist.has_uniform()) lo = dist.uniform().low(), hi = dist.uniform().high();
    if (dist.has_normal()) {
      std::normal_distribution<double> n(dist.normal().mean(), dist.normal().stddev());
      return scale(n(rng));
    }
    return scale(std::uniform_real_distribution<double>(lo, hi)(rng));
  }

  double scale(double v) const {
    // "signed": same magnitude range, random sign (catches kernels that assume non-negative data)
    if (set == "signed") return v;  // sign applied by caller
    if (set == "large") return v * (dtype == v1::F16 ? 64.0 : 1024.0);
    return v;
  }
};

}  // namespace

const std::vector<std::string>& input_set_names() {
  static const std::vector<std::string> names = {"declared", "signed", "large"};
  return names;
}

std::uint64_t tensor_elements(const v1::TensorSpec& t) {
  std::uint64_t n = 1;
  for (auto d : t.shape()) n *= static_cast<std::uint64_t>(d);
  return n;
}

InputSet write_input_set(const v1::NativeTask& task, unsigned index, const std::filesystem::path& dir) {
  const auto& names = input_set_names();
  InputSet set{names[index % names.size()], dir};
  if (index >= names.size()) set.name += fmt::format("-{}", index / names.size());
  std::filesystem::create_directories(dir);
  auto rng = seeded_engine();
  std::bernoulli_distribution coin(0.5);
  for (int i = 0; i < task.args_size(); ++i) {
    const auto& a = task.args(i);
    if (!a.has_tensor() || a.tensor().role() == v1::OUT) continue;
    const auto& ts = a.tensor();
    const std::uint64_t n = tensor_elements(ts);
    std::vector<std::byte> buf(n * dtype_size(ts.dtype()));
    Generator gen{ts.dtype(), ts.distribution(), set.name.substr(0, set.name.find('-'))};
    const bool flip = gen.set == "signed" && dtype_is_float(ts.dtype());
    for (std::uint64_t k = 0; k < n; ++k) {
      double v = gen(rng);
      if (flip && coin(rng)) v = -v;
      dtype_store(ts.dtype(), buf.data(), k, v);
    }
    const auto path = dir / fmt::format("arg{}.bin", i);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  return set;
}

}  // namespace kj
