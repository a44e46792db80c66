#include <gtest/gtest.h>

#include "kjqueue/queue.h"

using kjqueue::Keys;

// python/kjudge/keys.py must produce the same strings (tests/python/client/test_client.py pins them too).
TEST(QueueKeys, LiteralNames) {
  EXPECT_EQ(Keys::tag(0), "{p0}");
  EXPECT_EQ(Keys::tenants(0), "kj:{p0}:tenants");
  EXPECT_EQ(Keys::tokens(0), "kj:{p0}:tokens");
  EXPECT_EQ(Keys::jobs(0, "team-a"), "kj:{p0}:jobs:team-a");
  EXPECT_EQ(Keys::job_marker(3, "team-a", "job-1"), "kj:{p3}:job:team-a:job-1");
  EXPECT_EQ(Keys::result(0, "team-a", "job-1"), "kj:{p0}:result:team-a:job-1");
  EXPECT_EQ(Keys::done(12, "t"), "kj:{p12}:done:t");
  EXPECT_EQ(Keys::node(1, "gpu-01"), "kj:{p1}:node:gpu-01");
  EXPECT_EQ(Keys::artifact(0, "ab12"), "kj:{p0}:art:ab12");
  EXPECT_EQ(Keys::build_lease(2, "ab12"), "kj:{p2}:blease:ab12");
  EXPECT_EQ(Keys::building(0, "team-a"), "kj:{p0}:building:team-a");
  EXPECT_EQ(Keys::builders(0), "kj:{p0}:builders");
  EXPECT_STREQ(Keys::kGroup, "kjudged");
}

TEST(QueueKeys, EveryKeyCarriesTagAndTenant) {
  for (const auto& k : {Keys::jobs(7, "acme"), Keys::job_marker(7, "acme", "x"), Keys::result(7, "acme", "x"),
                        Keys::done(7, "acme")}) {
    EXPECT_NE(k.find("{p7}"), std::string::npos) << k;
    EXPECT_NE(k.find(":acme"), std::string::npos) << k;
  }
  EXPECT_NE(Keys::tenants(7).find("{p7}"), std::string::npos);
}

TEST(QueueKeys, TenantNames) {
  EXPECT_TRUE(kjqueue::valid_tenant("a"));
  EXPECT_TRUE(kjqueue::valid_tenant("team_a-01"));
  EXPECT_TRUE(kjqueue::valid_tenant(std::string(64, 'x')));
  EXPECT_FALSE(kjqueue::valid_tenant(""));
  EXPECT_FALSE(kjqueue::valid_tenant(std::string(65, 'x')));
  EXPECT_FALSE(kjqueue::valid_tenant("Team"));       // upper case
  EXPECT_FALSE(kjqueue::valid_tenant("a:b"));        // would split the key
  EXPECT_FALSE(kjqueue::valid_tenant("a{p1}"));      // would change the hash tag
  EXPECT_FALSE(kjqueue::valid_tenant("a b"));
  EXPECT_FALSE(kjqueue::valid_tenant(std::string("a\0b", 3)));
}

TEST(QueueKeys, JobIds) {
  EXPECT_TRUE(kjqueue::valid_job_id("job-1"));
  EXPECT_TRUE(kjqueue::valid_job_id("Run.7:step_12-cand-0003"));
  EXPECT_TRUE(kjqueue::valid_job_id(std::string(128, 'J')));
  EXPECT_FALSE(kjqueue::valid_job_id(""));
  EXPECT_FALSE(kjqueue::valid_job_id(std::string(129, 'J')));
  EXPECT_FALSE(kjqueue::valid_job_id("a/b"));
  EXPECT_FALSE(kjqueue::valid_job_id("a*"));         // glob character
  EXPECT_FALSE(kjqueue::valid_job_id("{p1}"));
  EXPECT_FALSE(kjqueue::valid_job_id("#1-0"));       // reserved for malformed entries
  EXPECT_FALSE(kjqueue::valid_job_id("caf\xc3\xa9"));
}
