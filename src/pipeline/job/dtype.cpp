#include "pipeline/job/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

namespace kj {
using kjudge::v1::DType;

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

const double* half_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (std::uint32_t h = 0; h < t.size(); ++h) t[h] = half_to_double(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table.data();
}

namespace {

std::uint16_t float_to_half(float f) {
  // round-to-nearest-even via the hardware-independent bit recipe
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (x >> 16) & 0x8000;
  std::int32_t exp = static_cast<std::int32_t>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(sign | h);
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return 0x7fc0;
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

template <typename T>
void store_as(std::byte* data, std::size_t i, T v) {
  std::memcpy(data + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

std::size_t dtype_size(DType t) {
  switch (t) {
    case kjudge::v1::F64: case kjudge::v1::I64: return 8;
    case kjudge::v1::F32: case kjudge::v1::I32: case kjudge::v1::U32: return 4;
    case kjudge::v1::F16: case kjudge::v1::BF16: case kjudge::v1::I16: return 2;
    case kjudge::v1::I8: case kjudge::v1::U8: case kjudge::v1::BOOL: return 1;
    default: return 0;
  }
}

bool dtype_is_float(DType t) {
  return t == kjudge::v1::F32 || t == kjudge::v1::F64 || t == kjudge::v1::F16 || t == kjudge::v1::BF16;
}

double dtype_load(DType t, const std::byte* d, std::size_t i) {
  switch (t) {
    case kjudge::v1::F32: return load_raw<float>(d, i);
    case kjudge::v1::F64: return load_raw<double>(d, i);
    case kjudge::v1::F16: return half_to_double(load_raw<std::uint16_t>(d, i));
    case kjudge::v1::BF16: return std::bit_cast<float>(static_cast<std::uint32_t>(load_raw<std::uint16_t>(d, i)) << 16);
    case kjudge::v1::I8: return load_raw<std::int8_t>(d, i);
    case kjudge::v1::I16: return load_raw<std::int16_t>(d, i);
    case kjudge::v1::I32: return load_raw<std::int32_t>(d, i);
    case kjudge::v1::I64: return static_cast<double>(load_raw<std::int64_t>(d, i));
    case kjudge::v1::U8: return load_raw<std::uint8_t>(d, i);
    case kjudge::v1::U32: return load_raw<std::uint32_t>(d, i);
    case kjudge::v1::BOOL: return load_raw<std::uint8_t>(d, i) != 0;
    default: return NAN;
  }
}

void dtype_store(DType t, std::byte* d, std::size_t i, double v) {
  switch (t) {
    case kjudge::v1::F32: store_as<float>(d, i, static_cast<float>(v)); break;
    case kjudge::v1::F64: store_as<double>(d, i, v); break;
    case kjudge::v1::F16: store_as<std::uint16_t>(d, i, float_to_half(static_cast<float>(v))); break;
    case kjudge::v1::BF16: store_as<std::uint16_t>(d, i, float_to_bf16(static_cast<float>(v))); break;
    case kjudge::v1::I8: store_as<std::int8_t>(d, i, static_cast<std::int8_t>(v)); break;
    case kjudge::v1::I16: store_as<std::int16_t>(d, i, static_cast<std::int16_t>(v)); break;
    case kjudge::v1::I32: store_as<std::int32_t>(d, i, static_cast<std::int32_t>(v)); break;
    case kjudge::v1::I64: store_as<std::int64_t>(d, i, static_cast<std::int64_t>(v)); break;
    case kjudge::v1::U8: store_as<std::uint8_t>(d, i, static_cast<std::uint8_t>(v)); break;
    case kjudge::v1::U32: store_as<std::uint32_t>(d, i, static_cast<std::uint32_t>(v)); break;
    case kjudge::v1::BOOL: store_as<std::uint8_t>(d, i, v != 0); break;
    default: break;
  }
}

}  // namespace kj
