// SHA-256 for content-addressed cache keys (libsodium's crypto_hash_sha256): candidates are
// adversarial, so the key of a build artifact must be collision resistant (a candidate colliding
// with the reference's key would otherwise receive the reference's binary).
#pragma once

#include <sodium/crypto_hash_sha256.h>

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
  crypto_hash_sha256_state state_;
};

std::string sha256_hex(std::string_view data);

}  // namespace kj
