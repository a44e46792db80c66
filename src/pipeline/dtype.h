// Element types of the wire contract: sizes and conversion to double for comparison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kjudge/v1/tensor.pb.h"

namespace kj {

std::size_t dtype_size(kjudge::v1::DType t);  // 0 for DTYPE_UNSPECIFIED
bool dtype_is_float(kjudge::v1::DType t);
// Reads element i of a raw little-endian buffer as double (f16/bf16 decoded exactly).
double dtype_load(kjudge::v1::DType t, const std::byte* data, std::size_t i);
// Stores v (rounded/truncated as the type requires) as element i.
void dtype_store(kjudge::v1::DType t, std::byte* data, std::size_t i, double v);

}  // namespace kj
