// CPU time and peak memory as measured from outside the child.
#include "helpers.h"

namespace kjtest {
namespace {

using kjsandbox::Outcome;

class SandboxAccounting : public SandboxTest {};

TEST_F(SandboxAccounting, CpuTimeOfOneSecondBusyLoop) {
  // Busy for one second of its own CPU time, in a grandchild of init (the shell waits for it):
  // the whole reaped tree is counted.
  auto p = shell("/usr/bin/python3 -c 'import time\nwhile time.process_time() < 1.0: pass'; true");
  auto r = kjsandbox::run(p);
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.cpu_seconds, 0.7);
  EXPECT_LT(r.cpu_seconds, 1.3);
  EXPECT_GE(r.wall_seconds, r.cpu_seconds * 0.9);
}

TEST_F(SandboxAccounting, WallTimeOfIdleSleep) {
  auto r = kjsandbox::run(policy_for({"/bin/sleep", "0.3"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error;
  EXPECT_GE(r.wall_seconds, 0.3);
  EXPECT_LT(r.wall_seconds, 1.5);
  EXPECT_LT(r.cpu_seconds, 0.2);
}

TEST_F(SandboxAccounting, PeakRssOf200MiB) {
  constexpr double kMiB = 1 << 20;
  // bytes * n writes every page; the interpreter itself adds ~10 MiB.
  auto r = kjsandbox::run(
      policy_for({"/usr/bin/python3", "-c", "b = b'x' * (200 << 20); print(len(b))"}));
  ASSERT_EQ(r.outcome, Outcome::Exited) << r.error << r.stderr_data;
  EXPECT_EQ(r.stdout_data, std::to_string(200 << 20) + "\n");
  const double mib = static_cast<double>(r.peak_rss_bytes) / kMiB;
  EXPECT_GT(mib, 200 * 0.9) << mib;
  EXPECT_LT(mib, 200 * 1.1) << mib;
}

}  // namespace
}  // namespace kjtest
