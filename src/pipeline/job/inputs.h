// The oracle's input generator: fills every IN/INOUT tensor of a task from a secret per-run seed.
// Seeds come from the OS entropy pool and are never written into results or feedback.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kjudge/v1/job.pb.h"

namespace kj {

struct InputSet {
  std::string name;                // "declared", "signed", ...
  std::filesystem::path dir;       // arg<i>.bin for IN/INOUT tensors
};

// Named value distributions used for the extra correctness sets, in order. Set 0 is always the
// declared distribution.
const std::vector<std::string>& input_set_names();

// Writes set `index` for `task` into `dir` (created). Returns the set's name.
InputSet write_input_set(const kjudge::v1::NativeTask& task, unsigned index, const std::filesystem::path& dir);

// Same generator for an explicit set name ("declared", "signed", "large", "spike", "timing-<k>", ...):
// the part before '-' picks the variant; anything unknown is the declared distribution.
InputSet write_named_input_set(const kjudge::v1::NativeTask& task, const std::string& name,
                               const std::filesystem::path& dir);

// 256 bits from getrandom(2): a ChaChaRng key.
std::array<std::uint64_t, 4> secret_seed();

// ChaCha20 keystream (libsodium) as a random number generator: a CSPRNG, so a candidate that sees
// some of the values (its own inputs) cannot compute the others (other sets, the spike's position,
// audit choices) without the 256-bit key, which never leaves the daemon. The keystream is made 4 KiB
// at a time; the same key always gives the same stream.
class ChaChaRng {
 public:
  using Key = std::array<std::uint64_t, 4>;
  explicit ChaChaRng(const Key& key);
  ~ChaChaRng();  // wipes the key and the unread keystream
  ChaChaRng(const ChaChaRng&) = delete;
  ChaChaRng& operator=(const ChaChaRng&) = delete;

  std::uint64_t next();
  double uniform01();                   // [0, 1), 53 bits
  std::uint64_t below(std::uint64_t n); // [0, n), unbiased; n == 0: any 64-bit value

 private:
  void refill();
  static constexpr std::size_t kWords = 512;  // 4 KiB of keystream per libsodium call
  std::array<unsigned char, 32> key_;
  std::uint64_t chunk_ = 0;  // the nonce: each 4 KiB chunk is the stream of its own nonce
  std::size_t pos_ = kWords;
  std::array<std::uint64_t, kWords> buf_;
};

std::uint64_t tensor_elements(const kjudge::v1::TensorSpec& t);

}  // namespace kj
