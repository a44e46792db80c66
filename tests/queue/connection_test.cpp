// Connecting, credentials, raw commands, and surviving a Redis restart.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "queue_fixture.h"

using namespace std::chrono_literals;
using kjqueue::Endpoint;
using kjqueue::Keys;
using kjqueue::Queue;
using kjqueue::QueueError;
using kjtest::QueueTest;

using QueueConnection = QueueTest;

TEST(QueueConnect, DeadSocketThrowsReadableError) {
  Endpoint ep;
  ep.url = "unix:///nonexistent-kjudge-dir/redis.sock";
  try {
    Queue q(ep);
    FAIL() << "connected to nothing";
  } catch (const QueueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unix:///nonexistent-kjudge-dir/redis.sock"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot connect"), std::string::npos) << msg;
    EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
  }
}

TEST(QueueConnect, StoppedServerThrows) {
  kjtest::RedisServer redis;
  const Endpoint ep = redis.endpoint();
  redis.stop();
  EXPECT_THROW(Queue{ep}, QueueError);
}

TEST(QueueConnect, BadUrlThrows) {
  Endpoint ep;
  ep.url = "localhost:6379";
  EXPECT_THROW(Queue{ep}, QueueError);
}

TEST_F(QueueConnection, RawCommandRendersReplies) {
  EXPECT_EQ(queue.command({"SET", "k", std::string("a\0b", 3)}), (std::vector<std::optional<std::string>>{"OK"}));
  EXPECT_EQ(queue.command({"GET", "k"}).at(0), std::string("a\0b", 3));
  EXPECT_EQ(queue.command({"GET", "missing"}), (std::vector<std::optional<std::string>>{std::nullopt}));
  EXPECT_EQ(queue.command({"INCR", "n"}).at(0), "1");
  queue.command({"RPUSH", "l", "x", "y"});
  EXPECT_EQ(queue.command({"LRANGE", "l", "0", "-1"}), (std::vector<std::optional<std::string>>{"x", "y"}));
  EXPECT_TRUE(queue.command({"LRANGE", "nolist", "0", "-1"}).empty());
  try {
    queue.command({"NOSUCHCOMMAND"});
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown command"), std::string::npos) << e.what();
  }
}

TEST_F(QueueConnection, AuthenticatesWithAclUser) {
  queue.command({"ACL", "SETUSER", "kjudged", "on", ">s3cret", "~kj:*", "+@all"});
  Endpoint ep = redis.endpoint();
  ep.username = "kjudged";
  ep.password = "s3cret";
  Queue q(ep);
  q.heartbeat("n1", "{}", 10s);
  EXPECT_EQ(one({"GET", Keys::node(0, "n1")}), "{}");

  ep.password = "wrong";
  try {
    Queue bad(ep);
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("WRONGPASS"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "password leaked: " << e.what();
  }
}

TEST_F(QueueConnection, LoadsFunctionsAgainWhenRedisLostThem) {
  queue.command({"FUNCTION", "FLUSH"});
  EXPECT_FALSE(queue.submit("team-a", "job-1", "p").duplicate);
  EXPECT_TRUE(queue.submit("team-a", "job-1", "p").duplicate);
}

TEST_F(QueueConnection, SurvivesARedisRestart) {
  queue.submit("team-a", "job-1", "p");
  redis.restart();  // data and functions gone, same socket
  // The old connection is dead: the first call reports it (it must not kill us with SIGPIPE)...
  EXPECT_THROW(queue.submit("team-a", "job-2", "p"), QueueError);
  // ...and the next one reconnects and reloads the functions.
  EXPECT_FALSE(queue.submit("team-a", "job-2", "p").duplicate);
  auto got = queue.fetch("node-1", 10, 200ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job_id, "job-2");
}

TEST_F(QueueConnection, CommandTimeoutDropsTheConnection) {
  Endpoint ep = redis.endpoint();
  ep.command_timeout = 200ms;
  Queue slow(ep);
  auto t0 = std::chrono::steady_clock::now();
  try {
    slow.command({"BLPOP", "nothing-here", "1"});  // the server holds the reply for 1 s
    FAIL();
  } catch (const QueueError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 900ms);
  EXPECT_EQ(slow.command({"PING"}).at(0), "PONG");  // reconnected
}
