#include "runner/tensors.h"

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "runner/error.h"

namespace kjudge::runner {

static_assert(std::endian::native == std::endian::little,
              "arg<i>.bin files are raw little-endian: add byte swapping for this host");

namespace v1 = kjudge::v1;

namespace {

constexpr std::size_t kAlignment = 64;

template <typename T>
void fill_pattern(std::span<std::byte> bytes, T pattern) {
  const std::size_t n = bytes.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * sizeof(T), &pattern, sizeof(T));
}

std::string describe(const HostTensor& t) {
  return fmt::format("argument {} '{}' ({})", t.index, t.name, v1::DType_Name(t.dtype));
}

void read_exact(const std::filesystem::path& path, HostTensor& t) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw RunnerError(fmt::format("cannot read input {}: {}", path.string(), ec.message()));
  if (size != t.bytes()) {
    throw RunnerError(fmt::format("input {} has {} bytes, {} needs {}", path.string(), size,
                                  describe(t), t.bytes()));
  }
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(t.bytes()));
  if (!in || in.gcount() != static_cast<std::streamsize>(t.bytes())) {
    throw RunnerError(fmt::format("cannot read input {}", path.string()));
  }
}

}  // namespace

std::size_t dtype_size(v1::DType dtype) {
  switch (dtype) {
    case v1::F32: return 4;
    case v1::F64: return 8;
    case v1::F16: return 2;
    case v1::BF16: return 2;
    case v1::I8: return 1;
    case v1::I16: return 2;
    case v1::I32: return 4;
    case v1::I64: return 8;
    case v1::U8: return 1;
    case v1::U32: return 4;
    case v1::BOOL: return 1;
    default: break;
  }
  throw RunnerError(fmt::format("unsupported dtype {}", static_cast<int>(dtype)));
}

std::size_t tensor_bytes(const v1::TensorSpec& spec) {
  std::size_t bytes = dtype_size(spec.dtype());
  for (const std::int64_t dim : spec.shape()) {
    if (dim < 0) throw RunnerError(fmt::format("negative tensor dimension {}", dim));
    if (__builtin_mul_overflow(bytes, static_cast<std::size_t>(dim), &bytes)) {
      throw RunnerError("tensor size overflows");
    }
  }
  return bytes;
}

void poison(std::span<std::byte> bytes, v1::DType dtype) {
  switch (dtype) {
    case v1::F32: fill_pattern<std::uint32_t>(bytes, 0x7FC00000u); return;
    case v1::F64: fill_pattern<std::uint64_t>(bytes, 0x7FF8000000000000ull); return;
    case v1::F16: fill_pattern<std::uint16_t>(bytes, 0x7E00u); return;
    case v1::BF16: fill_pattern<std::uint16_t>(bytes, 0x7FC0u); return;
    default: std::memset(bytes.data(), 0xA5, bytes.size()); return;
  }
}

std::string arg_file_name(int index) { return fmt::format("arg{}.bin", index); }

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  // aligned_alloc wants a multiple of the alignment; never ask for zero so data() is never null
  const std::size_t rounded = (bytes / kAlignment + 1) * kAlignment;
  if (rounded < bytes) throw RunnerError(fmt::format("cannot allocate {} bytes", bytes));
  ptr_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
  if (!ptr_) throw RunnerError(fmt::format("out of memory allocating {} bytes", bytes));
}

void AlignedBuffer::Free::operator()(std::byte* p) const noexcept { std::free(p); }

HostTensor load_tensor(const std::string& name, const v1::TensorSpec& spec, int index,
                       const std::filesystem::path& input_dir) {
  HostTensor t;
  t.index = index;
  t.name = name;
  t.dtype = spec.dtype();
  t.role = spec.role();
  t.data = AlignedBuffer(tensor_bytes(spec));
  switch (t.role) {
    case v1::IN:
    case v1::INOUT:
      if (input_dir.empty()) throw RunnerError(fmt::format("{} needs input_dir", describe(t)));
      read_exact(input_dir / arg_file_name(index), t);
      if (t.role == v1::INOUT) {
        t.pristine = AlignedBuffer(t.bytes());
        std::memcpy(t.pristine.data(), t.data.data(), t.bytes());
      }
      break;
    case v1::OUT:
      poison(t.data.span(), t.dtype);
      break;
    default:
      throw RunnerError(fmt::format("{} has no role (IN, OUT or INOUT)", describe(t)));
  }
  return t;
}

void write_tensor(const HostTensor& t, const std::filesystem::path& output_dir) {
  const auto path = output_dir / arg_file_name(t.index);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.bytes()));
  out.close();
  if (!out) throw RunnerError(fmt::format("cannot write output {}", path.string()));
}

void restore(HostTensor& t) {
  if (t.role == v1::INOUT) std::memcpy(t.data.data(), t.pristine.data(), t.bytes());
}

}  // namespace kjudge::runner
