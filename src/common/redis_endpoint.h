// The queue's connection settings from kjudged's [redis] config: one place for every connection
// a node opens (daemon, build node, build store).
#pragma once

#include "common/config.h"
#include "kjqueue/queue.h"

namespace kj {

inline kjqueue::Endpoint redis_endpoint(const RedisConfig& redis) {
  kjqueue::Endpoint e;
  e.url = redis.url;
  e.username = redis.username;
  e.password = redis.password;
  e.replica_acks = redis.replica_acks;
  return e;
}

}  // namespace kj
