#include "pipeline/job/inputs.h"

#include <fmt/format.h>
#include <sodium.h>
#include <sys/random.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <stdexcept>

#include "pipeline/job/dtype.h"

namespace kj {
namespace v1 = kjudge::v1;

std::array<std::uint64_t, 4> secret_seed() {
  std::array<std::uint64_t, 4> s{};
  auto* p = reinterpret_cast<char*>(s.data());
  std::size_t got = 0;
  while (got < sizeof(s)) {
    const ssize_t n = ::getrandom(p + got, sizeof(s) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed: no entropy for the oracle's seeds");
    }
    got += static_cast<std::size_t>(n);
  }
  return s;
}

namespace {
void ensure_sodium() {
  static const int rc = ::sodium_init();  // thread-safe once; 1 = already initialised
  if (rc < 0) throw std::runtime_error("sodium_init failed: no CSPRNG for the oracle");
}
}  // namespace

ChaChaRng::ChaChaRng(const Key& key) {
  static_assert(sizeof(Key) == crypto_stream_chacha20_KEYBYTES);
  ensure_sodium();
  std::memcpy(key_.data(), key.data(), key_.size());
}

ChaChaRng::~ChaChaRng() {
  ::sodium_memzero(key_.data(), key_.size());
  ::sodium_memzero(buf_.data(), sizeof(buf_));
}

void ChaChaRng::refill() {
  // Original ChaCha20 (64-bit nonce): one nonce per chunk never repeats under a key.
  static_assert(crypto_stream_chacha20_NONCEBYTES == sizeof(chunk_));
  unsigned char nonce[sizeof(chunk_)];
  for (std::size_t i = 0; i < sizeof(nonce); ++i) nonce[i] = static_cast<unsigned char>(chunk_ >> (8 * i));
  ++chunk_;
  ::crypto_stream_chacha20(reinterpret_cast<unsigned char*>(buf_.data()), sizeof(buf_), nonce, key_.data());
  pos_ = 0;
}

std::uint64_t ChaChaRng::next() {
  if (pos_ == kWords) refill();
  return buf_[pos_++];
}

double ChaChaRng::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t ChaChaRng::below(std::uint64_t n) {
  if (n == 0) return next();
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // rejection: no modulo bias
  for (;;)
    if (const std::uint64_t v = next(); v < limit) return v % n;
}

namespace {

// One value per element, by the set's variant of the declared distribution.
struct Generator {
  v1::DType dtype;
  v1::Distribution dist;
  std::string set;

  double base(ChaChaRng& rng) const {
    if (dist.has_constant()) return dist.constant();
    if (!dtype_is_float(dtype)) {
      std::int64_t lo = 0, hi = 100;
      if (dist.has_int_range()) lo = dist.int_range().low(), hi = dist.int_range().high();
      if (dtype == v1::BOOL) lo = 0, hi = 1;
      return static_cast<double>(lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo) + 1)));
    }
    if (dist.has_normal()) {  // Box-Muller
      const double u1 = 1.0 - rng.uniform01(), u2 = rng.uniform01();
      return dist.normal().mean() +
             dist.normal().stddev() * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    }
    double lo = -1, hi = 1;
    if (dist.has_uniform()) lo = dist.uniform().low(), hi = dist.uniform().high();
    return lo + (hi - lo) * rng.uniform01();
  }

  double operator()(ChaChaRng& rng) const {
    double v = base(rng);
    if (!dtype_is_float(dtype) || dist.has_constant()) return v;
    // "signed": same magnitudes, random sign (catches kernels that assume non-negative data)
    if (set == "signed" && (rng.next() & 1)) v = -v;
    // "large": magnitudes scaled up (catches precision downgrades and overflow-prone formulas)
    if (set == "large") v *= dtype == v1::F16 || dtype == v1::BF16 ? 16.0 : 1024.0;
    return v;
  }
};

}  // namespace

const std::vector<std::string>& input_set_names() {
  static const std::vector<std::string> names = {"declared", "signed", "large", "spike"};
  return names;
}

std::uint64_t tensor_elements(const v1::TensorSpec& t) {
  std::uint64_t n = 1;
  for (auto d : t.shape()) n *= static_cast<std::uint64_t>(d);
  return n;
}

InputSet write_input_set(const v1::NativeTask& task, unsigned index, const std::filesystem::path& dir) {
  const auto& names = input_set_names();
  InputSet set{names[index % names.size()], dir};
  if (index >= names.size()) set.name += fmt::format("-{}", index / names.size());
  return write_named_input_set(task, set.name, dir);
}

InputSet write_named_input_set(const v1::NativeTask& task, const std::string& name, const std::filesystem::path& dir) {
  InputSet set{name, dir};
  const std::string kind = name.substr(0, name.find('-'));
  std::filesystem::create_directories(dir);
  ChaChaRng rng(secret_seed());  // a fresh secret seed per set: nothing repeats across sets or runs
  for (int i = 0; i < task.args_size(); ++i) {
    const auto& a = task.args(i);
    if (!a.has_tensor() || a.tensor().role() == v1::OUT) continue;
    const auto& ts = a.tensor();
    const std::uint64_t n = tensor_elements(ts);
    std::vector<std::byte> buf(n * dtype_size(ts.dtype()));
    const Generator gen{ts.dtype(), ts.distribution(), kind};
    const auto& dist = ts.distribution();
    if (ts.dtype() == v1::F32 && !dist.has_normal() && !dist.has_constant() && kind != "large") {
      // fast path for the common case (uniform fp32): no per-element dispatch
      const double lo = dist.has_uniform() ? dist.uniform().low() : -1.0;
      const double width = (dist.has_uniform() ? dist.uniform().high() : 1.0) - lo;
      const bool flip = kind == "signed";
      auto* f = reinterpret_cast<float*>(buf.data());
      // One draw per value: the top 53 bits are the magnitude, bit 0 the sign of "signed" (the
      // keystream is the cost here, so no second draw; XOR, not a branch, for an unpredictable bit).
      const std::uint64_t sign_mask = flip ? 1 : 0;
      for (std::uint64_t k = 0; k < n; ++k) {
        const std::uint64_t bits = rng.next();
        const double v = lo + width * (static_cast<double>(bits >> 11) * 0x1.0p-53);
        f[k] = static_cast<float>(std::bit_cast<double>(std::bit_cast<std::uint64_t>(v) ^ ((bits & sign_mask) << 63)));
      }
    } else {
      for (std::uint64_t k = 0; k < n; ++k) dtype_store(ts.dtype(), buf.data(), k, gen(rng));
    }
    // "spike": the declared distribution plus one element far outside it, at a secret position
    // (catches subsampled reductions and kernels that skip elements).
    if (kind == "spike" && n > 0 && !ts.distribution().has_constant()) {
      const std::uint64_t at = rng.below(n);
      double spike;
      if (dtype_is_float(ts.dtype())) {
        spike = (rng.next() & 1 ? 1 : -1) * (ts.dtype() == v1::F16 || ts.dtype() == v1::BF16 ? 64.0 : 1000.0);
      } else {
        std::int64_t hi = ts.distribution().has_int_range() ? ts.distribution().int_range().high() : 100;
        spike = static_cast<double>(ts.dtype() == v1::BOOL ? 1 : hi);
      }
      dtype_store(ts.dtype(), buf.data(), at, spike);
    }
    const auto path = dir / fmt::format("arg{}.bin", i);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  return set;
}

}  // namespace kj
