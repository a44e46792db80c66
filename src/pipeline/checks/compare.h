// The comparator: candidate outputs against the oracle's, inside the daemon. Reports error
// statistics per tensor, never the expected values themselves.
#pragma once

#include <cstddef>
#include <span>

#include "kjudge/v1/result.pb.h"
#include "kjudge/v1/tensor.pb.h"

namespace kj {

struct Tolerance {
  double atol;  // scaled by max(1, max |expected|): a scale-aware absolute floor
  double rtol;
  bool scale_aware = true;  // false: torch.allclose's |a - e| <= atol + rtol * |e| exactly
  bool nan_equal = true;    // false: any NaN is a mismatch (torch.allclose's default)
};

// Default tolerance per element type (integers compare exactly).
Tolerance default_tolerance(kjudge::v1::DType dtype);

// NaN policy: a NaN in the expected output must be matched by a NaN; a NaN anywhere else is a
// mismatch (this is how unwritten, NaN-poisoned outputs are caught). Infinities must match exactly.
kjudge::v1::TensorComparison compare_tensor(kjudge::v1::DType dtype, std::span<const std::byte> expected,
                                            std::span<const std::byte> actual, const Tolerance& tol);

}  // namespace kj
