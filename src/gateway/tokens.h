// Per-tenant API tokens of kjudge-gateway. A token is "kjt_" and 64 random hex digits; only its
// SHA-256 is stored, in the hash kj:{pN}:tokens (sha256 hex -> tenant). `kjudge admin token`
// writes it (an admin's Redis user); the gateway reads it into a TokenTable.
#pragma once

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kjqueue/queue.h"

namespace kj::gateway {

std::string new_token();  // from getrandom; shown once, never stored

// Admin side. create: one more token for the tenant (its others keep working); revoke: every token
// of the tenant stops working (returns how many); rotate: revoke, then create, in one MULTI.
std::string create_token(kjqueue::Queue& q, const std::string& tenant);
std::size_t revoke_tokens(kjqueue::Queue& q, const std::string& tenant);
std::string rotate_token(kjqueue::Queue& q, const std::string& tenant);
// tenant -> number of live tokens
std::map<std::string, std::size_t> token_counts(kjqueue::Queue& q);

// Gateway side: the tokens hash as last read (replaced whole by the refresher thread).
class TokenTable {
 public:
  void load(kjqueue::Queue& q);  // HGETALL kj:{pN}:tokens
  std::optional<std::string> tenant_of(std::string_view token) const;
  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::string> tenant_by_hash_;
};

// "Bearer <token>" -> the token; empty when the header has another form.
std::string_view bearer_token(std::string_view authorization);

}  // namespace kj::gateway
