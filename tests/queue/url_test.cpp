#include <gtest/gtest.h>

#include "connection.h"

using kjqueue::QueueError;
using kjqueue::detail::Address;
using kjqueue::detail::parse_url;

TEST(QueueUrl, Unix) {
  Address a = parse_url("unix:///run/kjudge/redis.sock");
  EXPECT_EQ(a.kind, Address::Kind::kUnix);
  EXPECT_EQ(a.path, "/run/kjudge/redis.sock");
}

TEST(QueueUrl, Tcp) {
  Address a = parse_url("tcp://127.0.0.1:6380");
  EXPECT_EQ(a.kind, Address::Kind::kTcp);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(parse_url("tcp://redis.internal").port, 6379);
  Address v6 = parse_url("tcp://[::1]:7000");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7000);
}

TEST(QueueUrl, RedisWithCredentialsAndDb) {
  Address a = parse_url("redis://alice:p%40ss@redis.internal:6390/2");
  EXPECT_EQ(a.host, "redis.internal");
  EXPECT_EQ(a.port, 6390);
  EXPECT_EQ(a.username, "alice");
  EXPECT_EQ(a.password, "p@ss");
  EXPECT_EQ(a.db, 2);
  Address b = parse_url("redis://secret@h");
  EXPECT_EQ(b.username, "");
  EXPECT_EQ(b.password, "secret");
  EXPECT_EQ(b.port, 6379);
}

TEST(QueueUrl, RejectsGarbageReadably) {
  for (const char* bad : {"", "localhost:6379", "http://h:1", "rediss://h:1", "unix://relative.sock", "tcp://h:0",
                          "tcp://h:99999", "tcp://h:12x", "tcp://:6379", "tcp://[::1:6379", "redis://h/notadb",
                          "redis://u:%zz@h"}) {
    try {
      parse_url(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const QueueError& e) {
      EXPECT_NE(std::string(e.what()).find("redis url"), std::string::npos) << e.what();
    }
  }
}

TEST(QueueUrl, PasswordsNeverReachMessages) {
  using kjqueue::detail::redact_url;
  EXPECT_EQ(redact_url("redis://alice:secret@h:1/2"), "redis://alice:***@h:1/2");
  EXPECT_EQ(redact_url("redis://secret@h"), "redis://***@h");
  EXPECT_EQ(redact_url("unix:///run/a@b/redis.sock"), "unix:///run/a@b/redis.sock");
  EXPECT_EQ(redact_url("tcp://h:1"), "tcp://h:1");
  try {
    parse_url("redis://u:%zzsecret@h");
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
}
