#include "gateway/tokens.h"

#include <cctype>

#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "common/random.h"
#include "common/sha256.h"

namespace kj::gateway {
using kjqueue::Keys;

namespace {

std::vector<std::string> hashes_of(kjqueue::Queue& q, const std::string& tenant) {
  const auto flat = q.command({"HGETALL", Keys::tokens(q.partition())});
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
    if (flat[i] && flat[i + 1] == tenant) out.push_back(*flat[i]);
  return out;
}

void require_valid(const std::string& tenant) {
  if (!kjqueue::valid_tenant(tenant)) throw kjqueue::QueueError("invalid tenant '" + tenant + "' (want [a-z0-9_-]{1,64})");
}

}  // namespace

std::string new_token() {
  return fmt::format("kjt_{:016x}{:016x}{:016x}{:016x}", random_u64(), random_u64(), random_u64(), random_u64());
}

std::string create_token(kjqueue::Queue& q, const std::string& tenant) {
  require_valid(tenant);
  const std::string token = new_token();
  q.command({"HSET", Keys::tokens(q.partition()), sha256_hex(token), tenant});
  return token;
}

std::size_t revoke_tokens(kjqueue::Queue& q, const std::string& tenant) {
  require_valid(tenant);
  const auto hashes = hashes_of(q, tenant);
  if (hashes.empty()) return 0;
  std::vector<std::string> argv = {"HDEL", Keys::tokens(q.partition())};
  argv.insert(argv.end(), hashes.begin(), hashes.end());
  q.command(argv);
  return hashes.size();
}

std::string rotate_token(kjqueue::Queue& q, const std::string& tenant) {
  require_valid(tenant);
  const std::string token = new_token();
  const auto hashes = hashes_of(q, tenant);
  q.command({"MULTI"});
  if (!hashes.empty()) {
    std::vector<std::string> argv = {"HDEL", Keys::tokens(q.partition())};
    argv.insert(argv.end(), hashes.begin(), hashes.end());
    q.command(argv);
  }
  q.command({"HSET", Keys::tokens(q.partition()), sha256_hex(token), tenant});
  q.command({"EXEC"});
  return token;
}

std::map<std::string, std::size_t> token_counts(kjqueue::Queue& q) {
  const auto flat = q.command({"HGETALL", Keys::tokens(q.partition())});
  std::map<std::string, std::size_t> out;
  for (std::size_t i = 1; i < flat.size(); i += 2)
    if (flat[i]) ++out[*flat[i]];
  return out;
}

void TokenTable::load(kjqueue::Queue& q) {
  const auto flat = q.command({"HGETALL", Keys::tokens(q.partition())});
  std::unordered_map<std::string, std::string> fresh;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
    if (flat[i] && flat[i + 1]) fresh.emplace(*flat[i], *flat[i + 1]);
  std::unique_lock lock(mutex_);
  tenant_by_hash_.swap(fresh);
}

std::optional<std::string> TokenTable::tenant_of(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256_hex(token);
  std::shared_lock lock(mutex_);
  const auto it = tenant_by_hash_.find(hash);
  if (it == tenant_by_hash_.end()) return std::nullopt;
  return it->second;
}

std::size_t TokenTable::size() const {
  std::shared_lock lock(mutex_);
  return tenant_by_hash_.size();
}

// RFC 9110 §11.1: the scheme is case-insensitive and 1*SP separates it from the token.
std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size() || authorization[scheme.size()] != ' ') return {};
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return {};
  auto token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

}  // namespace kj::gateway
