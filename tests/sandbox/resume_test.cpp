// A resume zygote (sandbox.h register_resume_zygote): the command comes back into the zygote's
// program instead of exec'ing argv, inside the same sandbox an exec'd command gets.
#include <thread>

#include "helpers.h"

namespace kjtest {
namespace {

using Clock = std::chrono::steady_clock;

class SandboxResume : public SandboxTest {};

kjsandbox::Policy resumed(std::vector<std::string> argv) {
  kjsandbox::Policy p = policy_for(std::move(argv));
  p.resume_in = "resume-test";
  p.env["JOB_VALUE"] = "42";
  return p;
}

// Runs until a launch was resumed (the zygote starts in the background); its report, or none.
std::optional<kjsandbox::Report> first_resumed_run(const kjsandbox::Policy& p) {
  const auto until = Clock::now() + 20s;
  while (Clock::now() < until) {
    const auto before = kjsandbox::launch_stats().resumed;
    auto rep = kjsandbox::run(p);
    if (kjsandbox::launch_stats().resumed > before) return rep;
    std::this_thread::sleep_for(50ms);
  }
  return std::nullopt;
}

TEST_F(SandboxResume, TheResumedCommandRunsInItsOwnSandboxWithTheJobsArgvAndEnvironment) {
  kjsandbox::register_resume_zygote("resume-test", {KJSBX_RESUME_PROG}, {{"ZYGOTE_ONLY", "1"}}, 10s);
  const auto rep = first_resumed_run(resumed({"/bin/echo", "7"}));
  ASSERT_TRUE(rep) << "no launch was resumed: " << kjsandbox::launch_stats().resumed;
  const std::string& out = rep->stdout_data;
  // the zygote's program printed this, not /bin/echo
  EXPECT_NE(out.find("argv: /bin/echo 7\n"), std::string::npos) << out;
  EXPECT_NE(out.find("env: JOB_VALUE=42 PATH=/usr/bin:/bin\n"), std::string::npos) << out;
  EXPECT_NE(out.find("zygote env: absent"), std::string::npos) << out;
  EXPECT_NE(out.find("fd3: closed"), std::string::npos) << out;  // the status channel: exec would close it
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  EXPECT_NE(out.find("pid1: kjsandbox-init"), std::string::npos) << out;
  EXPECT_EQ(out.find("uid: 0\n"), std::string::npos) << out;
  EXPECT_EQ(rep->outcome, kjsandbox::Outcome::Exited);
  EXPECT_EQ(rep->exit_code, 7);  // its status is the command's
}

TEST_F(SandboxResume, WithoutItsZygoteTheCommandIsExecd) {
  kjsandbox::Policy p = resumed({"/bin/echo", "exec'd"});
  p.resume_in = "not-registered";
  const auto rep = kjsandbox::run(p);
  EXPECT_EQ(rep.stdout_data, "exec'd\n");
}

}  // namespace
}  // namespace kjtest
