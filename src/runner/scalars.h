// Scalar kernel arguments: a ScalarValue converted to its dtype's C representation, passed by value
// (I32 -> int32_t, I64 -> int64_t, F32 -> float, F64 -> double, U32 -> uint32_t, BOOL -> 1 byte...).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "kjudge/v1/tensor.pb.h"

namespace kjudge::runner {

struct Scalar {
  int index = 0;
  std::string name;
  kjudge::v1::DType dtype = kjudge::v1::DTYPE_UNSPECIFIED;
  std::size_t size = 0;                        // sizeof the C type
  alignas(8) std::array<std::byte, 8> value{};  // the value in that type, little-endian

  const void* data() const noexcept { return value.data(); }
  void* data() noexcept { return value.data(); }
};

// Converts the value (i or f) to the dtype, rejecting values the dtype cannot hold exactly
// (out of range, a fraction for an integer type) and F16/BF16, which no backend passes by value.
Scalar make_scalar(const std::string& name, const kjudge::v1::ScalarValue& value, int index);

}  // namespace kjudge::runner
