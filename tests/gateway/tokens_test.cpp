#include "gateway/tokens.h"

#include <gtest/gtest.h>

namespace kj::gateway {
namespace {

TEST(Tokens, TheBearerSchemeIsCaseInsensitive) {  // RFC 9110 §11.1
  for (const char* h : {"Bearer kjt_x", "bearer kjt_x", "BEARER kjt_x", "bEaReR   kjt_x", "Bearer kjt_x  "})
    EXPECT_EQ(bearer_token(h), "kjt_x") << h;
  for (const char* h : {"", "Bearer", "Bearerkjt_x", "Basic kjt_x", "Bearer: kjt_x", "kjt_x"})
    EXPECT_EQ(bearer_token(h), "") << h;
}

}  // namespace
}  // namespace kj::gateway
