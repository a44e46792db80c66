#include "runner/scalars.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runner/error.h"

namespace kjudge::runner {

namespace v1 = kjudge::v1;

namespace {

template <typename T>
void store(Scalar& s, T v) {
  static_assert(sizeof(T) <= sizeof(s.value));
  s.size = sizeof(T);
  std::memcpy(s.value.data(), &v, sizeof(T));
}

// The integer the scalar holds: i as is, f only when it is integral and fits int64.
std::int64_t integer_of(const v1::ScalarValue& v, const std::string& what) {
  if (v.value_case() == v1::ScalarValue::kI) return v.i();
  const double f = v.f();
  if (std::trunc(f) != f || !(f >= -0x1p63 && f < 0x1p63)) {
    throw RunnerError(fmt::format("{}: {} is not an integer", what, f));
  }
  return static_cast<std::int64_t>(f);
}

template <typename T>
void store_integer(Scalar& s, const v1::ScalarValue& v, const std::string& what) {
  const std::int64_t i = integer_of(v, what);
  // uint32 is the widest unsigned dtype, so every limit fits int64
  if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
      i > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
    throw RunnerError(fmt::format("{}: {} is out of range", what, i));
  }
  store<T>(s, static_cast<T>(i));
}

double float_of(const v1::ScalarValue& v) {
  return v.value_case() == v1::ScalarValue::kI ? static_cast<double>(v.i()) : v.f();
}

}  // namespace

Scalar make_scalar(const std::string& name, const v1::ScalarValue& v, int index) {
  Scalar s;
  s.index = index;
  s.name = name;
  s.dtype = v.dtype();
  const std::string what =
      fmt::format("scalar argument {} '{}' ({})", index, name, v1::DType_Name(v.dtype()));
  if (v.value_case() == v1::ScalarValue::VALUE_NOT_SET) {
    throw RunnerError(fmt::format("{} has no value", what));
  }
  switch (v.dtype()) {
    case v1::I8: store_integer<std::int8_t>(s, v, what); break;
    case v1::I16: store_integer<std::int16_t>(s, v, what); break;
    case v1::I32: store_integer<std::int32_t>(s, v, what); break;
    case v1::I64: store<std::int64_t>(s, integer_of(v, what)); break;
    case v1::U8: store_integer<std::uint8_t>(s, v, what); break;
    case v1::U32: store_integer<std::uint32_t>(s, v, what); break;
    case v1::BOOL: {
      const std::int64_t i = integer_of(v, what);
      if (i != 0 && i != 1) throw RunnerError(fmt::format("{}: {} is not 0 or 1", what, i));
      store<std::uint8_t>(s, static_cast<std::uint8_t>(i));
      break;
    }
    case v1::F32: store<float>(s, static_cast<float>(float_of(v))); break;
    case v1::F64: store<double>(s, float_of(v)); break;
    default: throw RunnerError(fmt::format("{}: dtype not supported for scalars", what));
  }
  return s;
}

}  // namespace kjudge::runner
