#include "pipeline/checks/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pipeline/job/dtype.h"

namespace kj {
namespace v1 = kjudge::v1;

Tolerance default_tolerance(v1::DType dtype) {
  switch (dtype) {
    case v1::F64: return {1e-10, 1e-10};
    case v1::F32: return {1e-5, 1e-4};
    case v1::F16: return {1e-3, 1e-2};
    case v1::BF16: return {1e-2, 2e-2};
    default: return {0, 0};
  }
}

v1::TensorComparison compare_tensor(v1::DType dtype, std::span<const std::byte> expected,
                                    std::span<const std::byte> actual, const Tolerance& tol) {
  v1::TensorComparison c;
  c.set_atol(tol.atol);
  c.set_rtol(tol.rtol);
  c.set_first_mismatch_index(-1);
  const std::size_t es = dtype_size(dtype);
  if (es == 0 || expected.size() % es != 0) {
    c.set_problem("unknown element type");
    return c;
  }
  const std::size_t n = expected.size() / es;
  c.set_elements(n);
  if (actual.size() != expected.size()) {
    c.set_problem(fmt::format("output has {} bytes, expected {} ({} elements of {} bytes)", actual.size(),
                              expected.size(), n, es));
    c.set_mismatches(n);
    return c;
  }
  double scale = 1.0;
  std::uint64_t bad = 0, nan_bad = 0;
  double max_abs = 0, max_rel = 0;
  std::int64_t first_bad = -1;
  with_dtype_loader(dtype, [&](auto load) {
    const std::byte *ed = expected.data(), *ad = actual.data();
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      const double m = std::abs(load(ed, i));
      if (m < kInf) scale = std::max(scale, m);  // finite values only (NaN compares false)
    }
    const double abs_floor = tol.scale_aware ? tol.atol * scale : tol.atol;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = load(ed, i), a = load(ad, i);
      const double d = std::abs(a - e), lim = abs_floor + tol.rtol * std::abs(e);
      if (d <= lim && lim < kInf) [[likely]] {  // both finite and within tolerance: the common case
        max_abs = std::max(max_abs, d);
        max_rel = std::max(max_rel, e != 0 ? d / std::abs(e) : 0.0);
        continue;
      }
      bool ok;
      if (std::isnan(e) || std::isnan(a)) {
        ok = tol.nan_equal && std::isnan(e) && std::isnan(a);
        if (!ok && std::isnan(a)) ++nan_bad;
      } else if (std::isinf(e) || std::isinf(a)) {
        ok = e == a;
      } else {
        max_abs = std::max(max_abs, d);
        if (e != 0) max_rel = std::max(max_rel, d / std::abs(e));
        ok = d <= lim;
      }
      if (!ok && bad++ == 0) first_bad = static_cast<std::int64_t>(i);
    }
  });
  c.set_first_mismatch_index(first_bad);
  c.set_mismatches(bad);
  c.set_max_abs_error(max_abs);
  c.set_max_rel_error(max_rel);
  c.set_passed(bad == 0);
  c.set_nan_outputs(nan_bad);
  if (nan_bad) c.set_problem(fmt::format("{} elements are NaN where a number was expected (unwritten output?)", nan_bad));
  return c;
}

}  // namespace kj
