// FairPicker: weighted shares, and an idle tenant's next job goes at the next free slot.
#include <gtest/gtest.h>

#include "daemon/fair.h"

namespace {

TEST(FaultFairPicker, SharesFollowWeights) {
  kj::FairPicker p;
  std::map<std::string, unsigned> w = {{"a", 3}, {"b", 1}, {"c", 2}};
  std::map<std::string, int> n;
  for (int i = 0; i < 600; ++i) ++n[p.pick(w)];
  EXPECT_EQ(n["a"], 300);
  EXPECT_EQ(n["b"], 100);
  EXPECT_EQ(n["c"], 200);
}

TEST(FaultFairPicker, SmoothNotBursty) {
  kj::FairPicker p;
  std::map<std::string, unsigned> w = {{"a", 1}, {"b", 1}};
  std::string prev;
  for (int i = 0; i < 100; ++i) {
    auto t = p.pick(w);
    EXPECT_NE(t, prev);
    prev = t;
  }
}

TEST(FaultFairPicker, IdleTenantWinsTheNextPickWithoutBursting) {
  kj::FairPicker p;
  std::map<std::string, unsigned> both = {{"flood", 1}, {"quiet", 1}};
  std::map<std::string, unsigned> flood_only = {{"flood", 1}};
  // quiet is probed, found empty and refunded many times while flood is served
  for (int i = 0; i < 1000; ++i) {
    auto t = p.pick(both);
    if (t == "quiet") {
      p.refund("quiet", both);
      EXPECT_EQ(p.pick(flood_only), "flood");
    }
  }
  // quiet now has work: it is served at the next pick, then they alternate (no burst)
  EXPECT_EQ(p.pick(both), "quiet");
  int quiet = 0;
  for (int i = 0; i < 10; ++i) quiet += p.pick(both) == "quiet";
  EXPECT_EQ(quiet, 5);
}

TEST(FaultFairPicker, NoCandidates) {
  kj::FairPicker p;
  EXPECT_EQ(p.pick({}), "");
}

}  // namespace
