// Element types of the wire contract: sizes and conversion to double for comparison.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kjudge/v1/tensor.pb.h"

namespace kj {

std::size_t dtype_size(kjudge::v1::DType t);  // 0 for DTYPE_UNSPECIFIED
bool dtype_is_float(kjudge::v1::DType t);
// Reads element i of a raw little-endian buffer as double (f16/bf16 decoded exactly).
double dtype_load(kjudge::v1::DType t, const std::byte* data, std::size_t i);
// Stores v (rounded/truncated as the type requires) as element i.
void dtype_store(kjudge::v1::DType t, std::byte* data, std::size_t i, double v);

double half_to_double(std::uint16_t h);
const double* half_table();  // all 65536 f16 values decoded, for hot loops
template <typename T>
T load_raw(const std::byte* data, std::size_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}

// Calls f(load) where load(data, i) reads element i as double, specialised for t: a loop over a
// whole tensor (the comparator's) is compiled once per element type instead of switching per
// element. Returns false for an unknown type.
template <typename F>
bool with_dtype_loader(kjudge::v1::DType t, F&& f) {
  namespace v1 = kjudge::v1;
  switch (t) {
    case v1::F32: f([](const std::byte* d, std::size_t i) { return double(load_raw<float>(d, i)); }); return true;
    case v1::F64: f([](const std::byte* d, std::size_t i) { return load_raw<double>(d, i); }); return true;
    case v1::F16:
      f([h = half_table()](const std::byte* d, std::size_t i) { return h[load_raw<std::uint16_t>(d, i)]; });
      return true;
    case v1::BF16:
      f([](const std::byte* d, std::size_t i) {
        return double(std::bit_cast<float>(std::uint32_t(load_raw<std::uint16_t>(d, i)) << 16));
      });
      return true;
    case v1::I8: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::int8_t>(d, i)); }); return true;
    case v1::I16: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::int16_t>(d, i)); }); return true;
    case v1::I32: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::int32_t>(d, i)); }); return true;
    case v1::I64: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::int64_t>(d, i)); }); return true;
    case v1::U8: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::uint8_t>(d, i)); }); return true;
    case v1::U32: f([](const std::byte* d, std::size_t i) { return double(load_raw<std::uint32_t>(d, i)); }); return true;
    case v1::BOOL: f([](const std::byte* d, std::size_t i) { return load_raw<std::uint8_t>(d, i) != 0 ? 1.0 : 0.0; }); return true;
    default: return false;
  }
}

}  // namespace kj
