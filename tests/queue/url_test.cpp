#include <gtest/gtest.h>

#include "connection.h"
#include "staged_result.h"

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

TEST(QueueUrl, SentinelUrlsNameTheSentinelsAndTheMaster) {
  Address a = parse_url("redis+sentinel://alice:s%40cret@10.0.0.1:26380,sent-b,[::1]:7000/kjudge/3");
  EXPECT_EQ(a.kind, Address::Kind::kSentinel);
  ASSERT_EQ(a.sentinels.size(), 3u);
  EXPECT_EQ(a.sentinels[0], std::make_pair(std::string("10.0.0.1"), 26380));
  EXPECT_EQ(a.sentinels[1], std::make_pair(std::string("sent-b"), 26379));
  EXPECT_EQ(a.sentinels[2], std::make_pair(std::string("::1"), 7000));
  EXPECT_EQ(a.master_name, "kjudge");
  EXPECT_EQ(a.db, 3);
  EXPECT_EQ(a.username, "alice");
  EXPECT_EQ(a.password, "s@cret");
  EXPECT_EQ(parse_url("redis+sentinel://h/m").db, 0);
  EXPECT_EQ(kjqueue::detail::redact_url("redis+sentinel://alice:secret@h:1,g:2/m"), "redis+sentinel://alice:***@h:1,g:2/m");
  for (const char* bad : {"redis+sentinel://h:1", "redis+sentinel://h:1/", "redis+sentinel:///m", "redis+sentinel://h:0/m",
                          "redis+sentinel://h:1,,g/m", "redis+sentinel://h:1/m/notadb"}) {
    try {
      parse_url(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const QueueError& e) {
      EXPECT_NE(std::string(e.what()).find("redis url"), std::string::npos) << e.what();
    }
  }
}

TEST(QueueUrl, StagedResultsRoundTripAndRefuseGarbage) {
  using kjqueue::detail::StagedResult;
  const std::string bytes("\0r:1\xff", 5);
  StagedResult s{"INCORRECT", "dead: 3 deliveries", "g7", 4, bytes};
  auto back = kjqueue::detail::decode_staged(kjqueue::detail::encode(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->verdict, "INCORRECT");
  EXPECT_EQ(back->dead_reason, "dead: 3 deliveries");
  EXPECT_EQ(back->group, "g7");
  EXPECT_EQ(back->turn, 4u);
  EXPECT_EQ(back->result, bytes);
  for (const char* bad : {"", "kjstage1:", "kjstage1:2:OK", "kjstage1:99:OK0:0:1:01:x", "other"})
    EXPECT_FALSE(kjqueue::detail::decode_staged(bad)) << bad;
}
