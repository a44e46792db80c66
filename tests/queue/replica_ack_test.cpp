// Replica acknowledgements (Endpoint::replica_acks) on a server without a replica: nothing is
// acknowledged and no result becomes visible; the staged result is kept for whoever files it.
// (With real replicas and sentinels: tests/cluster/test_cluster.py.)
#include <gtest/gtest.h>

#include <chrono>

#include "queue_fixture.h"

using namespace std::chrono_literals;
using kjqueue::Keys;
using kjtest::QueueTest;

namespace {

kjqueue::Endpoint needing_a_replica(kjqueue::Endpoint e) {
  e.replica_acks = 1;
  e.replica_ack_timeout = std::chrono::milliseconds(100);
  e.failover_wait = std::chrono::milliseconds(0);
  return e;
}

}  // namespace

using QueueReplicaAck = QueueTest;

TEST_F(QueueReplicaAck, WithoutAReplicaASubmissionIsNotAcknowledged) {
  kjqueue::Queue ha(needing_a_replica(redis.endpoint()));
  try {
    ha.submit("team-a", "job-1", "payload");
    FAIL() << "acknowledged without a replica";
  } catch (const kjqueue::Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("0 of 1 replicas"), std::string::npos) << e.what();
  }
  // the retry (same job id) is a duplicate, and still not acknowledged
  EXPECT_THROW(ha.submit("team-a", "job-1", "payload"), kjqueue::Unavailable);
  EXPECT_TRUE(queue.submit("team-a", "job-1", "payload").duplicate);
}

TEST_F(QueueReplicaAck, AResultNoReplicaHoldsStaysInvisibleAndTheFirstStagedOneIsFiled) {
  queue.submit("team-a", "job-1", "payload");
  auto got = queue.fetch("node-1", 1, 500ms);
  ASSERT_EQ(got.size(), 1u);
  kjqueue::Queue ha(needing_a_replica(redis.endpoint()));
  EXPECT_THROW(ha.complete(got[0], "job-1", "first", "OK", 60s), kjqueue::Unavailable);
  EXPECT_EQ(queue.get_result("team-a", "job-1"), std::nullopt);  // not visible to any client
  EXPECT_TRUE(one({"GET", Keys::staged(0, "team-a", "job-1")}).has_value());
  // another node judged it again (say after a failover) and a replica is back: it files what
  // was staged first, not its own verdict (the WAIT that fails here is the only difference)
  EXPECT_THROW(ha.complete(got[0], "job-1", "second", "INCORRECT", 60s), kjqueue::Unavailable);
  const std::string staged = one({"GET", Keys::staged(0, "team-a", "job-1")}).value();
  EXPECT_NE(staged.find("first"), std::string::npos);
  EXPECT_EQ(staged.find("second"), std::string::npos);
  EXPECT_EQ(queue.get_result("team-a", "job-1"), std::nullopt);
}
