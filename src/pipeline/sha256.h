// SHA-256 (FIPS 180-4) for content-addressed cache keys: candidates are adversarial, so the key of a
// build artifact must be collision resistant (a candidate colliding with the reference's key would
// otherwise receive the reference's binary). Small, self-contained; OpenSSL is not linked.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kj {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view data);
  // Length-prefixed field: keys built from several strings cannot be re-split ambiguously.
  Sha256& field(std::string_view data);
  std::string hex();  // finishes; call once

 private:
  void block(const unsigned char* p);
  std::array<std::uint32_t, 8> h_;
  std::array<unsigned char, 64> buf_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace kj
