#include "common/sha256.h"

#include <fmt/format.h>

namespace kj {

Sha256::Sha256() { crypto_hash_sha256_init(&state_); }

Sha256& Sha256::update(std::string_view data) {
  crypto_hash_sha256_update(&state_, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return *this;
}

Sha256& Sha256::field(std::string_view data) {
  update(fmt::format("{}:", data.size()));
  return update(data);
}

std::string Sha256::hex() {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&state_, digest);
  std::string out;
  for (unsigned char b : digest) out += fmt::format("{:02x}", b);
  return out;
}

std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex(); }

}  // namespace kj
