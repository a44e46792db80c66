// Host-side tensor buffers: sizes from dtype x shape, loading inputs from arg<i>.bin, poisoning
// outputs so an unwritten element is detected, writing results back, restoring INOUT inputs.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "kjudge/v1/tensor.pb.h"

namespace kjudge::runner {

// Bytes per element; throws RunnerError for DTYPE_UNSPECIFIED or an unknown value.
std::size_t dtype_size(kjudge::v1::DType dtype);

// product(shape) x dtype size; throws RunnerError on a negative dimension or overflow.
std::size_t tensor_bytes(const kjudge::v1::TensorSpec& spec);

// Fill with the dtype's poison: quiet NaN for float types (f32, f64, f16 0x7E00, bf16 0x7FC0),
// the byte 0xA5 for integer types and bool.
void poison(std::span<std::byte> bytes, kjudge::v1::DType dtype);

// "arg<index>.bin"
std::string arg_file_name(int index);

// 64-byte aligned heap buffer (never null, even for zero bytes).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);

  std::byte* data() noexcept { return ptr_.get(); }
  const std::byte* data() const noexcept { return ptr_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::span<std::byte> span() noexcept { return {ptr_.get(), size_}; }
  std::span<const std::byte> span() const noexcept { return {ptr_.get(), size_}; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, Free> ptr_;
  std::size_t size_ = 0;
};

struct HostTensor {
  int index = 0;  // argument index: names arg<index>.bin
  std::string name;
  kjudge::v1::DType dtype = kjudge::v1::DTYPE_UNSPECIFIED;
  kjudge::v1::ArgRole role = kjudge::v1::ROLE_UNSPECIFIED;
  AlignedBuffer data;      // what the kernel reads and writes
  AlignedBuffer pristine;  // INOUT only: the input as loaded, to restore before each call

  std::size_t bytes() const noexcept { return data.size(); }
  bool is_output() const noexcept {
    return role == kjudge::v1::OUT || role == kjudge::v1::INOUT;
  }
};

// IN/INOUT: read input_dir/arg<index>.bin (its size must match exactly); OUT: allocate and poison.
HostTensor load_tensor(const std::string& name, const kjudge::v1::TensorSpec& spec, int index,
                       const std::filesystem::path& input_dir);

// Write the tensor to output_dir/arg<index>.bin.
void write_tensor(const HostTensor& tensor, const std::filesystem::path& output_dir);

// INOUT: copy the pristine input back into data; no-op for other roles.
void restore(HostTensor& tensor);

}  // namespace kjudge::runner
