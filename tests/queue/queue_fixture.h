// A fresh redis-server and a connected Queue (functions loaded) per test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kjqueue/queue.h"
#include "redis_server.h"

namespace kjtest {

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override { queue.load_functions(); }

  // Raw command, first element (or empty optional).
  std::optional<std::string> one(const std::vector<std::string>& argv) {
    auto r = queue.command(argv);
    return r.empty() ? std::nullopt : r.front();
  }
  long long num(const std::vector<std::string>& argv) { return std::stoll(one(argv).value()); }

  RedisServer redis;
  kjqueue::Queue queue{redis.endpoint()};
};

// Protobuf bytes contain NUL and high bytes; so do these.
inline std::string binary(const std::string& tag) {
  return std::string("\0\x01\xff", 3) + tag + std::string("\0\n\r\0", 4);
}

}  // namespace kjtest
