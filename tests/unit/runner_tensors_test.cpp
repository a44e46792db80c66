// kjudge-runner host tensors: sizes, poison patterns, loading, writing, INOUT restore.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "runner/error.h"
#include "runner/tensors.h"

namespace {

namespace v1 = kjudge::v1;
namespace fs = std::filesystem;
using kjudge::runner::RunnerError;

v1::TensorSpec spec(v1::DType dtype, std::vector<std::int64_t> shape, v1::ArgRole role) {
  v1::TensorSpec s;
  s.set_dtype(dtype);
  for (auto d : shape) s.add_shape(d);
  s.set_role(role);
  return s;
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("kjrunner-tensors-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

template <typename T>
void write_raw(const fs::path& p, const std::vector<T>& v) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(v.data()),
                                           static_cast<std::streamsize>(v.size() * sizeof(T)));
}

TEST(RunnerTensors, DtypeSizes) {
  using kjudge::runner::dtype_size;
  EXPECT_EQ(dtype_size(v1::F32), 4u);
  EXPECT_EQ(dtype_size(v1::F64), 8u);
  EXPECT_EQ(dtype_size(v1::F16), 2u);
  EXPECT_EQ(dtype_size(v1::BF16), 2u);
  EXPECT_EQ(dtype_size(v1::I8), 1u);
  EXPECT_EQ(dtype_size(v1::I16), 2u);
  EXPECT_EQ(dtype_size(v1::I32), 4u);
  EXPECT_EQ(dtype_size(v1::I64), 8u);
  EXPECT_EQ(dtype_size(v1::U8), 1u);
  EXPECT_EQ(dtype_size(v1::U32), 4u);
  EXPECT_EQ(dtype_size(v1::BOOL), 1u);
  EXPECT_THROW(dtype_size(v1::DTYPE_UNSPECIFIED), RunnerError);
}

TEST(RunnerTensors, BytesAreShapeProductTimesDtype) {
  using kjudge::runner::tensor_bytes;
  EXPECT_EQ(tensor_bytes(spec(v1::F32, {256, 256}, v1::IN)), 256u * 256u * 4u);
  EXPECT_EQ(tensor_bytes(spec(v1::I64, {}, v1::IN)), 8u);  // a 0-d tensor holds one element
  EXPECT_EQ(tensor_bytes(spec(v1::F16, {3, 0}, v1::IN)), 0u);
  EXPECT_THROW(tensor_bytes(spec(v1::F32, {-1}, v1::IN)), RunnerError);
  EXPECT_THROW(tensor_bytes(spec(v1::F64, {INT64_MAX, INT64_MAX}, v1::IN)), RunnerError);
}

TEST(RunnerTensors, PoisonMakesFloatsNaNAndIntsA5) {
  using kjudge::runner::poison;
  std::vector<std::byte> buf(16);
  poison(buf, v1::F32);
  float f = 0;
  std::memcpy(&f, buf.data() + 12, 4);
  EXPECT_TRUE(std::isnan(f));
  poison(buf, v1::F64);
  double d = 0;
  std::memcpy(&d, buf.data() + 8, 8);
  EXPECT_TRUE(std::isnan(d));
  poison(buf, v1::F16);
  std::uint16_t h = 0;
  std::memcpy(&h, buf.data() + 14, 2);
  EXPECT_EQ(h, 0x7E00);
  poison(buf, v1::BF16);
  std::memcpy(&h, buf.data(), 2);
  EXPECT_EQ(h, 0x7FC0);
  for (auto dt : {v1::I8, v1::I32, v1::I64, v1::U8, v1::U32, v1::BOOL}) {
    poison(buf, dt);
    for (auto b : buf) EXPECT_EQ(b, std::byte{0xA5});
  }
}

TEST(RunnerTensors, LoadsInputsAndPoisonsOutputs) {
  TempDir dir;
  write_raw(dir.path() / "arg0.bin", std::vector<float>{1, 2, 3});
  const auto in = kjudge::runner::load_tensor("a", spec(v1::F32, {3}, v1::IN), 0, dir.path());
  ASSERT_EQ(in.bytes(), 12u);
  EXPECT_EQ(reinterpret_cast<const float*>(in.data.data())[2], 3.0f);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(in.data.data()) % 64, 0u);

  const auto out = kjudge::runner::load_tensor("o", spec(v1::F32, {3}, v1::OUT), 1, dir.path());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(reinterpret_cast<const float*>(out.data.data())[i]));
  EXPECT_FALSE(fs::exists(dir.path() / "arg1.bin"));  // outputs are never read
}

TEST(RunnerTensors, InputSizeMustMatchExactly) {
  TempDir dir;
  write_raw(dir.path() / "arg2.bin", std::vector<float>{1, 2});
  try {
    kjudge::runner::load_tensor("a", spec(v1::F32, {3}, v1::IN), 2, dir.path());
    FAIL() << "a short input was accepted";
  } catch (const RunnerError& e) {
    EXPECT_NE(std::string(e.what()).find("has 8 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kjudge::runner::load_tensor("a", spec(v1::F32, {3}, v1::IN), 3, dir.path()), RunnerError);
  EXPECT_THROW(kjudge::runner::load_tensor("a", spec(v1::F32, {1}, v1::ROLE_UNSPECIFIED), 2, dir.path()),
               RunnerError);
}

TEST(RunnerTensors, InoutRestoresAndOutputsAreWritten) {
  TempDir dir;
  write_raw(dir.path() / "arg0.bin", std::vector<std::int32_t>{7, 8});
  auto t = kjudge::runner::load_tensor("x", spec(v1::I32, {2}, v1::INOUT), 0, dir.path());
  auto* x = reinterpret_cast<std::int32_t*>(t.data.data());
  x[0] = 100;
  kjudge::runner::write_tensor(t, dir.path());  // over the input file, already read
  kjudge::runner::restore(t);
  EXPECT_EQ(x[0], 7);
  std::ifstream in(dir.path() / "arg0.bin", std::ios::binary);
  std::int32_t written[2] = {};
  in.read(reinterpret_cast<char*>(written), sizeof(written));
  EXPECT_EQ(written[0], 100);
  EXPECT_EQ(written[1], 8);
}

}  // namespace
