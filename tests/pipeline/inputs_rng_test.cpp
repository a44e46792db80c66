// The oracle's generator (ChaCha20 keystream, pipeline/job/inputs.h) and the input sets it writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "pipeline/job/dtype.h"
#include "pipeline/job/inputs.h"

namespace {
namespace fs = std::filesystem;
namespace v1 = kjudge::v1;

// Upper critical value of chi-square with `df` degrees of freedom at p = 1e-4 (Wilson-Hilferty):
// an honest generator fails one check in 10^4, a biased one fails every time.
double chi2_critical(int df) {
  const double z = 3.719, a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

double chi2(const std::vector<std::uint64_t>& counts, double expected) {
  double s = 0;
  for (auto c : counts) s += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected) / expected;
  return s;
}

TEST(ChaChaRng, IsTheChaCha20Keystream) {
  // Published ChaCha20 vectors (draft-agl-tls-chacha20poly1305, key 0): nonce 0, then nonce 1 (the
  // second 4 KiB chunk), read as little-endian 64-bit words. Xoshiro or any other generator fails.
  kj::ChaChaRng r({0, 0, 0, 0});
  EXPECT_EQ(r.next(), 0x903df1a0ade0b876ull);  // 76b8e0ad a0f13d90
  EXPECT_EQ(r.next(), 0x28bd8653e56a5d40ull);  // 405d6ae5 5386bd28
  EXPECT_EQ(r.next(), 0x1aed8da0b819d2bdull);  // bdd219b8 a08ded1a
  for (int i = 3; i < 512; ++i) r.next();
  EXPECT_EQ(r.next(), 0xfb7815c6d6df3fefull);  // ef3fdfd6 c61578fb: nonce 1, block 0
}

TEST(ChaChaRng, SameKeySameStreamOtherKeyOtherStream) {
  kj::ChaChaRng a({1, 2, 3, 4}), b({1, 2, 3, 4}), c({1, 2, 3, 5});
  int same_as_c = 0;
  for (int i = 0; i < 3000; ++i) {  // across several 4 KiB refills
    const auto x = a.next();
    ASSERT_EQ(x, b.next()) << i;
    same_as_c += x == c.next();
  }
  EXPECT_EQ(same_as_c, 0);
}

TEST(ChaChaRng, FreshSecretKeysGiveDifferentStreams) {
  EXPECT_NE(kj::secret_seed(), kj::secret_seed());
  kj::ChaChaRng a(kj::secret_seed()), b(kj::secret_seed());
  std::vector<std::uint64_t> va, vb;
  for (int i = 0; i < 64; ++i) va.push_back(a.next()), vb.push_back(b.next());
  EXPECT_NE(va, vb);
  std::sort(va.begin(), va.end());
  std::sort(vb.begin(), vb.end());
  std::vector<std::uint64_t> common;
  std::set_intersection(va.begin(), va.end(), vb.begin(), vb.end(), std::back_inserter(common));
  EXPECT_TRUE(common.empty());
}

TEST(ChaChaRng, EveryBitIsBalanced) {
  kj::ChaChaRng r(kj::secret_seed());
  constexpr int kN = 20000;
  std::vector<int> ones(64, 0);
  for (int i = 0; i < kN; ++i) {
    const auto v = r.next();
    for (int b = 0; b < 64; ++b) ones[b] += static_cast<int>((v >> b) & 1);
  }
  for (int b = 0; b < 64; ++b) EXPECT_NEAR(ones[b], kN / 2, 5 * std::sqrt(kN / 4.0)) << "bit " << b;
}

TEST(ChaChaRng, Uniform01StaysInRangeWithTheRightMean) {
  kj::ChaChaRng r(kj::secret_seed());
  constexpr int kN = 100000;
  double sum = 0, lo = 1, hi = 0;
  for (int i = 0; i < kN; ++i) {
    const double u = r.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u, lo = std::min(lo, u), hi = std::max(hi, u);
  }
  EXPECT_NEAR(sum / kN, 0.5, 5 * std::sqrt(1.0 / 12 / kN));
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
}

TEST(ChaChaRng, BelowIsUniformOnSmallRanges) {
  kj::ChaChaRng r(kj::secret_seed());
  for (std::uint64_t n : {2u, 3u, 5u, 7u, 10u, 100u}) {
    const std::uint64_t draws = 2000 * n;
    std::vector<std::uint64_t> counts(n, 0);
    for (std::uint64_t i = 0; i < draws; ++i) {
      const auto v = r.below(n);
      ASSERT_LT(v, n);
      ++counts[v];
    }
    EXPECT_LT(chi2(counts, 2000.0), chi2_critical(static_cast<int>(n) - 1)) << "n = " << n;
  }
}

// On a range close to 2^64 plain `next() % n` is visibly biased (the low third of the range comes
// twice as often); below() must not be. The same statistic on `% n` shows the check has teeth.
TEST(ChaChaRng, BelowHasNoModuloBias) {
  constexpr std::uint64_t kThird = 1ull << 62, kN = 3 * kThird;
  constexpr int kDraws = 30000;
  kj::ChaChaRng r(kj::secret_seed());
  std::vector<std::uint64_t> honest(3, 0), modulo(3, 0);
  for (int i = 0; i < kDraws; ++i) {
    const auto v = r.below(kN);
    ASSERT_LT(v, kN);
    ++honest[v / kThird];
    ++modulo[(r.next() % kN) / kThird];
  }
  EXPECT_LT(chi2(honest, kDraws / 3.0), chi2_critical(2));
  EXPECT_GT(chi2(modulo, kDraws / 3.0), chi2_critical(2));  // the biased variant is caught
}

// --- the input sets written from it ---

struct RngTempDir {
  fs::path path = fs::temp_directory_path() / ("kjrng-" + std::to_string(::getpid()));
  RngTempDir() { fs::create_directories(path); }
  ~RngTempDir() { fs::remove_all(path); }
};

constexpr std::int64_t kLen = 4096;

v1::Argument* add_tensor(v1::NativeTask& t, v1::DType dtype, v1::ArgRole role) {
  auto* a = t.add_args();
  a->mutable_tensor()->set_dtype(dtype);
  a->mutable_tensor()->add_shape(kLen);
  a->mutable_tensor()->set_role(role);
  return a;
}

// arg0 f32 uniform[2,5), arg1 i32 [-3,7], arg2 f32 OUT, arg3 f64 normal(10, 0.5), arg4 bool,
// arg5 f16 default [-1,1), arg6 f32 constant 3.5, arg7 f64 uniform[-2,-1) (the generic path)
v1::NativeTask task() {
  v1::NativeTask t;
  auto* u = add_tensor(t, v1::F32, v1::IN)->mutable_tensor()->mutable_distribution()->mutable_uniform();
  u->set_low(2), u->set_high(5);
  auto* ir = add_tensor(t, v1::I32, v1::INOUT)->mutable_tensor()->mutable_distribution()->mutable_int_range();
  ir->set_low(-3), ir->set_high(7);
  add_tensor(t, v1::F32, v1::OUT);
  auto* nd = add_tensor(t, v1::F64, v1::IN)->mutable_tensor()->mutable_distribution()->mutable_normal();
  nd->set_mean(10), nd->set_stddev(0.5);
  add_tensor(t, v1::BOOL, v1::IN);
  add_tensor(t, v1::F16, v1::IN);
  add_tensor(t, v1::F32, v1::IN)->mutable_tensor()->mutable_distribution()->set_constant(3.5);
  auto* u64 = add_tensor(t, v1::F64, v1::IN)->mutable_tensor()->mutable_distribution()->mutable_uniform();
  u64->set_low(-2), u64->set_high(-1);
  return t;
}

std::vector<double> load(const fs::path& dir, int arg, v1::DType dtype) {
  std::ifstream in(dir / ("arg" + std::to_string(arg) + ".bin"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size(), kLen * kj::dtype_size(dtype)) << "arg" << arg;
  std::vector<double> v;
  for (std::size_t i = 0; i * kj::dtype_size(dtype) < bytes.size(); ++i)
    v.push_back(kj::dtype_load(dtype, reinterpret_cast<const std::byte*>(bytes.data()), i));
  return v;
}

// Elements outside [lo, hi].
int outside(const std::vector<double>& v, double lo, double hi) {
  return static_cast<int>(std::count_if(v.begin(), v.end(), [&](double x) { return !(x >= lo && x <= hi); }));
}

TEST(InputSets, DeclaredSetFollowsTheDeclaredDistributions) {
  RngTempDir d;
  kj::write_named_input_set(task(), "declared", d.path);
  const auto f = load(d.path, 0, v1::F32);
  EXPECT_EQ(outside(f, 2, 5), 0);
  EXPECT_LT(*std::min_element(f.begin(), f.end()), 2.01);
  EXPECT_GT(*std::max_element(f.begin(), f.end()), 4.99);
  const auto ints = load(d.path, 1, v1::I32);
  EXPECT_EQ(outside(ints, -3, 7), 0);
  for (int k = -3; k <= 7; ++k) EXPECT_NE(std::find(ints.begin(), ints.end(), k), ints.end()) << k;  // bounds inclusive
  EXPECT_FALSE(fs::exists(d.path / "arg2.bin"));  // OUT tensors get no input
  const auto nd = load(d.path, 3, v1::F64);
  double mean = 0, var = 0;
  for (double x : nd) mean += x / kLen;
  for (double x : nd) var += (x - mean) * (x - mean) / (kLen - 1);
  EXPECT_NEAR(mean, 10, 5 * 0.5 / std::sqrt(kLen));
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.05);
  EXPECT_EQ(outside(nd, 10 - 6 * 0.5, 10 + 6 * 0.5), 0);
  const auto b = load(d.path, 4, v1::BOOL);
  EXPECT_EQ(outside(b, 0, 1), 0);
  EXPECT_NEAR(std::count(b.begin(), b.end(), 1.0), kLen / 2, 5 * std::sqrt(kLen / 4.0));
  EXPECT_EQ(outside(load(d.path, 5, v1::F16), -1, 1), 0);
  const auto c = load(d.path, 6, v1::F32);
  EXPECT_EQ(std::count(c.begin(), c.end(), 3.5), kLen);
  EXPECT_EQ(outside(load(d.path, 7, v1::F64), -2, -1), 0);
}

TEST(InputSets, SignedLargeAndSpikeVariants) {
  RngTempDir d;
  const auto t = task();
  kj::write_named_input_set(t, "signed", d.path / "signed");
  for (const auto& [arg, dtype, lo, hi] : {std::tuple{0, v1::F32, 2.0, 5.0}, std::tuple{7, v1::F64, 1.0, 2.0}}) {
    const auto s = load(d.path / "signed", arg, dtype);
    const auto neg = std::count_if(s.begin(), s.end(), [](double x) { return x < 0; });
    EXPECT_NEAR(neg, kLen / 2, 5 * std::sqrt(kLen / 4.0)) << "arg" << arg;  // a fair sign per element
    for (double x : s) ASSERT_TRUE(std::abs(x) >= lo && std::abs(x) <= hi) << x;  // same magnitudes
  }
  EXPECT_EQ(outside(load(d.path / "signed", 1, v1::I32), -3, 7), 0);  // integers keep their range

  kj::write_named_input_set(t, "large", d.path / "large");
  EXPECT_EQ(outside(load(d.path / "large", 0, v1::F32), 2 * 1024, 5 * 1024), 0);
  EXPECT_EQ(outside(load(d.path / "large", 5, v1::F16), -16, 16), 0);

  kj::write_named_input_set(t, "spike", d.path / "spike");
  const auto sp = load(d.path / "spike", 0, v1::F32);
  EXPECT_EQ(outside(sp, 2, 5), 1);  // exactly one element, far outside
  EXPECT_EQ(std::count_if(sp.begin(), sp.end(), [](double x) { return std::abs(x) == 1000; }), 1);
  EXPECT_EQ(outside(load(d.path / "spike", 6, v1::F32), 3.5, 3.5), 0);  // constants stay constant
}

TEST(InputSets, EverySetAndRunHasItsOwnValues) {
  RngTempDir d;
  const auto t = task();
  kj::write_named_input_set(t, "declared", d.path / "a");
  kj::write_named_input_set(t, "declared", d.path / "b");
  EXPECT_NE(load(d.path / "a", 0, v1::F32), load(d.path / "b", 0, v1::F32));
  EXPECT_NE(load(d.path / "a", 3, v1::F64), load(d.path / "b", 3, v1::F64));
  // the spike's position is secret too: two spike sets put it in different places (1 in 4096 alike)
  std::vector<std::size_t> at;
  for (const char* dir : {"s1", "s2", "s3"}) {
    kj::write_named_input_set(t, "spike", d.path / dir);
    const auto v = load(d.path / dir, 0, v1::F32);
    at.push_back(static_cast<std::size_t>(
        std::find_if(v.begin(), v.end(), [](double x) { return std::abs(x) == 1000; }) - v.begin()));
  }
  EXPECT_FALSE(at[0] == at[1] && at[1] == at[2]);
}

// Generation speed (run with --gtest_also_run_disabled_tests): 64 Mi fp32 values of the uniform
// fast path, keystream only and through write_named_input_set (file write included).
TEST(InputSets, DISABLED_Throughput64MiFloats) {
  constexpr std::size_t kCount = 64ull << 20;
  kj::ChaChaRng r(kj::secret_seed());
  std::vector<float> f(kCount);
  auto t0 = std::chrono::steady_clock::now();
  for (auto& x : f) x = static_cast<float>(-1 + 2 * r.uniform01());
  const double gen = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RngTempDir d;
  v1::NativeTask t;
  auto* a = t.add_args()->mutable_tensor();
  a->set_dtype(v1::F32), a->add_shape(static_cast<std::int64_t>(kCount)), a->set_role(v1::IN);
  double set_s[2];
  int k = 0;
  for (const char* name : {"declared", "signed"}) {
    t0 = std::chrono::steady_clock::now();
    kj::write_named_input_set(t, name, d.path / name);
    set_s[k++] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::cout << "64 Mi fp32: uniform01 loop " << gen << " s; write_named_input_set declared " << set_s[0]
            << " s, signed " << set_s[1] << " s (256 MiB file each)\n";
  EXPECT_GT(f[12345] + f[54321], -3.0f);
}

}  // namespace
